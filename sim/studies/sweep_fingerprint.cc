// What a sweep's results are made from (sweep_internal.h): the fingerprint sweep_meta.json and
// every row carry, and the words for a difference, which --resume and --merge refuse.
#include "sim/studies/sweep.h"
#include "sim/studies/sweep_internal.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/common/status_macros.h"
#include "sim/results/content_hash.h"
#include "sim/results/git_info.h"
#include "sim/results/source_tree.h"
#include "sim/workload/input_file.h"

namespace dspark::sim::sweep_internal {
using ojson = nlohmann::ordered_json;

namespace {

ojson HashedFile(const std::string& path, const std::string& sha1) {
  return {{"path", path}, {"sha1", sha1}};
}

std::string Shown(const ojson& v) { return Abbreviate(v.is_string() ? v.get<std::string>() : v.dump(), 200); }

std::string CodeText(const ojson& code) {
  if (!code.is_object()) return "unknown";
  return absl::StrCat("git ", Shown(code.value("git_sha", ojson("unknown"))),
                      code.value("git_dirty", false) ? " with uncommitted changes" : "");
}

}  // namespace

absl::StatusOr<ojson> SweepFingerprint(const SweepConfig& c, const std::vector<SweepPoint>& points) {
  ojson fp;
  fp["run"] = {{"seed", c.seed}, {"executor", c.executor}, {"check_impls", c.check_impls}, {"run_args", c.run_args}};
  if (c.model != ModelKind::kV41) fp["run"]["model"] = std::string(ModelFlag(c.model));
  ojson traces = ojson::array();
  for (const std::string& t : c.traces) {
    absl::StatusOr<std::string> sha1 = FileSha1(t);
    if (!sha1.ok()) return absl::Status(sha1.status().code(), absl::StrCat("--trace: ", sha1.status().message()));
    traces.push_back(HashedFile(t, *sha1));
  }
  fp["traces"] = std::move(traces);
  // Every point's run reads the same calibration: the pass-through --calibration, or the bundled
  // one; none at all means the built-in defaults, which the code covers.
  std::string calibration = points.empty() ? std::string() : points.front().config.calibration;
  if (calibration.empty()) calibration = BundledCalibrationPath();
  if (calibration.empty()) {
    fp["calibration"] = HashedFile("", "built-in defaults");
  } else {
    absl::StatusOr<std::string> sha1 = FileSha1(calibration);
    if (!sha1.ok())
      return absl::Status(sha1.status().code(), absl::StrCat("--calibration: ", sha1.status().message()));
    fp["calibration"] = HashedFile(calibration, *sha1);
  }
  const GitRevision rev = ReadGitRevision();
  fp["code"] = {{"git_sha", rev.sha}, {"git_dirty", rev.known ? ojson(rev.dirty) : ojson(nullptr)}};
  ojson out = {{"digest", TextSha1(fp.dump())}};
  out.update(fp);
  return out;
}

std::string FingerprintDifference(const ojson& was, const ojson& now) {
  if (!was.is_object() || !was.contains("digest"))
    return "it has no fingerprint (it was made by an older dspark-sim), so what it was made from is unknown";
  if (was["digest"] == now["digest"]) return "";
  std::vector<std::string> diffs;
  if (was.value("code", ojson()) != now.value("code", ojson()))
    diffs.push_back(absl::StrCat("the code (", CodeText(was.value("code", ojson())), " then, ",
                                 CodeText(now.value("code", ojson())), " now)"));
  const ojson run_was = was.value("run", ojson()), run_now = now.value("run", ojson());
  if (run_was.is_object() && run_now.is_object())
    for (const auto& [key, value] : run_now.items())
      if (run_was.value(key, ojson()) != value)
        diffs.push_back(absl::StrCat("the run option ", key, " (", Shown(run_was.value(key, ojson())), " then, ",
                                     Shown(value), " now)"));
  const ojson traces_was = was.value("traces", ojson::array()), traces_now = now.value("traces", ojson::array());
  if (traces_was != traces_now) {
    bool named = false;
    if (traces_was.is_array() && traces_was.size() == traces_now.size())
      for (size_t i = 0; i < traces_now.size(); ++i)
        if (traces_was[i].value("path", ojson()) == traces_now[i].value("path", ojson()) &&
            traces_was[i] != traces_now[i]) {
          diffs.push_back(absl::StrCat("the trace '", Shown(traces_now[i]["path"]), "' (sha1 ",
                                       Shown(traces_was[i].value("sha1", ojson())), " then, ",
                                       Shown(traces_now[i]["sha1"]), " now)"));
          named = true;
        }
    if (!named) diffs.push_back(absl::StrCat("the traces (", Shown(traces_was), " then, ", Shown(traces_now), " now)"));
  }
  const ojson cal_was = was.value("calibration", ojson()), cal_now = now.value("calibration", ojson());
  if (cal_was != cal_now)
    diffs.push_back(absl::StrCat("the calibration (", Shown(cal_was.value("path", ojson())), " sha1 ",
                                 Shown(cal_was.value("sha1", ojson())), " then, ", Shown(cal_now.value("path", ojson())),
                                 " sha1 ", Shown(cal_now.value("sha1", ojson())), " now)"));
  if (diffs.empty()) diffs.push_back("the fingerprint's digest");
  return absl::StrJoin(diffs, "; ");
}

}  // namespace dspark::sim::sweep_internal
