// Running (or resuming) a sweep: sweep_meta.json, the points of this shard, one durable row per
// finished point (sweep.h).
#include "sim/studies/sweep.h"
#include "sim/studies/sweep_internal.h"
#include "sim/results/result_meta.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "sim/exec/cuda_device.h"
#include "sim/results/out_folder.h"
#include "sim/results/result_files.h"
#include "sim/studies/workload.h"

namespace dspark::sim {
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using namespace sweep_internal;

namespace {

absl::Status TruncateFile(const fs::path& path, int64_t bytes) {
  std::error_code ec;
  fs::resize_file(path, static_cast<uintmax_t>(bytes), ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot truncate '", path.string(), "': ", ec.message()));
  return absl::OkStatus();
}

// ---- Progress ----

std::string Describe(const SweepPoint& p) {
  return absl::StrFormat("%s c=%d b=%d %s %s", p.workload_label, p.concurrency, p.batch_size,
                         SpecModeName(p.mode), ImplKey(p.impl));
}

// A point's expected cost: the tokens it replays, every request's prompt + output. A checked
// step costs about its tokens (times the block table's width, the same for the points of one
// sweep unless --max-model-len differs), and the steps follow the output tokens, so the tokens
// are the points' relative cost where their request counts are not: a whole trace and a 50-request
// preset are both one point. 0 when the workload cannot be built (the point will say why).
// Points that replay the same workload (other modes, implementations, concurrencies) share one
// build.
class PointCosts {
 public:
  int64_t Of(const SweepPoint& p) {
    const auto key = std::make_tuple(p.workload, p.trace, p.num_requests, p.config.seed,
                                     p.config.scheduler.max_model_len);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    int64_t tokens = 0;
    if (absl::StatusOr<Workload> w = BuildWorkload(p.config); w.ok())
      for (const RequestSpec& r : w->requests) tokens += int64_t{r.prompt_len} + r.output_len;
    cache_.emplace(key, tokens);
    return tokens;
  }

 private:
  std::map<std::tuple<std::string, std::string, int64_t, uint64_t, int32_t>, int64_t> cache_;
};

// Points of the sweep on the shared meter (sim/observe/progress.h), which counts the points'
// expected cost (PointCosts), not the points, so that its percentage and ETA follow the work: a
// sweep of seven short points and one whole trace is not 7/8 done after the short ones. The bar
// names the point running; lines mode writes one line per finished point. A point expected to
// take longer than the meter's line interval (by the rate so far) shows its own `run` meter.
class Progress {
 public:
  Progress(ProgressStyle style, std::FILE* out, int64_t points, int64_t total_cost)
      : meter_(style, out, "sweep", "tokens", total_cost), points_(points) {}

  void Note(const std::string& line) { meter_.Note(line); }
  ProgressStyle style() const { return meter_.style(); }

  // Whether point p (of `cost`) should show its own run meter: expected to take longer than a
  // line interval at the rate of the points finished so far (unknown before the first one).
  bool LongPoint(int64_t cost) const {
    if (meter_.style() == ProgressStyle::kNone || done_cost_ <= 0) return false;
    return meter_.Elapsed() / static_cast<double>(done_cost_) * static_cast<double>(cost) >
           ProgressMeter::kLinesIntervalS;
  }

  void Starting(const SweepPoint& p) {
    current_ = absl::StrFormat("point %lld/%lld %s", static_cast<long long>(done_ + 1),
                               static_cast<long long>(points_), Describe(p).c_str());
    if (meter_.style() == ProgressStyle::kBar) meter_.Update(done_cost_, current_, /*force=*/true);
  }

  void Finished(const SweepPoint& p, int64_t cost, const std::string& status, double seconds) {
    ++done_;
    done_cost_ += cost;
    if (meter_.style() == ProgressStyle::kLines) {
      meter_.Note(absl::StrFormat("sweep: [%lld/%lld] %s %s (%s) in %s | elapsed %s, ETA %s",
                                  static_cast<long long>(done_), static_cast<long long>(points_),
                                  status.c_str(), p.id.c_str(), Describe(p).c_str(),
                                  FormatDuration(seconds).c_str(), FormatDuration(meter_.Elapsed()).c_str(),
                                  meter_.Eta(done_cost_).c_str()));
    } else if (meter_.style() == ProgressStyle::kBar) {
      if (status != "ok") Note(absl::StrCat("sweep: ", status, " ", p.id));
      meter_.Update(done_cost_, current_, /*force=*/true);
    }
  }

  void End() {
    if (meter_.style() == ProgressStyle::kBar && done_ > 0) meter_.End(done_cost_, "done");
  }

 private:
  ProgressMeter meter_;
  int64_t points_, done_ = 0, done_cost_ = 0;
  std::string current_;
};

// Errors in the inputs (a bad option value, a missing or malformed trace) would repeat at
// every point; anything else (e.g. a metadata check that found a bug) is that point's result.
bool IsInputError(const absl::Status& s) {
  return absl::IsInvalidArgument(s) || absl::IsNotFound(s) || absl::IsPermissionDenied(s);
}

}  // namespace

absl::StatusOr<SweepOutcome> RunSweep(const SweepConfig& config, std::FILE* progress_out) {
  DS_RETURN_IF_ERROR(config.Validate());
  if (!config.merge_inputs.empty())
    return absl::InvalidArgumentError("RunSweep: merge_inputs is set; call MergeSweeps");
  DS_ASSIGN_OR_RETURN(PointRunner runner, FindPointRunner(config.executor));
  if (config.executor == "gpu")  // before anything is written: every point would fail the same way
    if (absl::Status s = RequireCudaDevice(kGpuExecutorNeedsDevice); !s.ok())
      return absl::Status(s.code(), absl::StrCat("--executor gpu: ", s.message()));
  DS_ASSIGN_OR_RETURN(std::vector<SweepPoint> points, PlanSweep(config));

  const fs::path out(config.out_dir);
  // One process per --out: a second sweep (or a merge) into it fails here, before it writes.
  DS_ASSIGN_OR_RETURN(const OutFolderLock out_lock, OutFolderLock::Acquire(out, "sweep"));
  std::error_code ec;
  fs::create_directories(out / "points", ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("--out: cannot create '", out.string(), "': ", ec.message()));
  // Point folders are made and removed under OUT/points only: never through a symlink.
  DS_RETURN_IF_ERROR(CheckRealFolder(out / "points", "--out", /*absent_ok=*/false));
  const fs::path log_path = out / kLogName;
  // Temporary files of writers killed with an earlier invocation; never under a final name.
  for (const fs::path& dir : {out, out / "points"}) DS_RETURN_IF_ERROR(RemoveStaleTempFiles(dir).status());

  DS_ASSIGN_OR_RETURN(SweepLog log, ReadSweepLog(log_path.string()));
  std::error_code size_ec;
  const bool log_nonempty = fs::exists(log_path) && fs::file_size(log_path, size_ec) > 0;
  if (!config.resume && log_nonempty)
    return absl::FailedPreconditionError(absl::StrFormat(
        "'%s' already holds %d rows: pass --resume to continue that sweep, or choose another --out",
        log_path.string(), log.rows.size()));
  // sweep_meta.json: the first invocation's meta stays; each invocation is appended.
  const fs::path meta_path = out / kMetaName;
  ojson meta_file;
  if (config.resume && fs::exists(meta_path)) {
    DS_ASSIGN_OR_RETURN(meta_file, ReadJsonFile(meta_path));
    if (!meta_file.is_object())
      return absl::InvalidArgumentError(absl::StrCat(meta_path.string(), ": expected a JSON object"));
  }
  // What the results are made from: a resume adds rows only to a sweep of the same inputs.
  DS_ASSIGN_OR_RETURN(const ojson fingerprint, SweepFingerprint(config, points));
  const std::string digest = fingerprint["digest"].get<std::string>();
  if (config.resume && (meta_file.contains("fingerprint") || !log.rows.empty())) {
    std::string differs = FingerprintDifference(meta_file.value("fingerprint", ojson()), fingerprint);
    for (size_t i = 0; differs.empty() && i < log.rows.size(); ++i)
      if (log.rows[i].value("fingerprint", ojson()) != digest)
        differs = absl::StrCat(log_path.string(), ":", i + 1, " has fingerprint ",
                               log.rows[i].value("fingerprint", ojson()).dump(), ", this invocation ", digest);
    if (!differs.empty())
      return absl::FailedPreconditionError(absl::StrCat(
          "--resume: '", out.string(), "' was made from other inputs than this invocation's: ", differs,
          ". Its rows would mix with results of different inputs: start fresh with another --out (or "
          "remove that folder), or resume with the options, traces, calibration and code it was made with"));
  }
  Progress progress(config.progress, progress_out, 0, 0);
  if (log.partial_tail) {
    DS_RETURN_IF_ERROR(TruncateFile(log_path, log.valid_bytes));
    progress.Note(absl::StrCat("sweep: dropped a cut-short last line of ", log_path.string(),
                               " (a point that was being recorded when the sweep stopped)"));
  }
  std::set<std::string> done;
  for (const ojson& row : log.rows)
    if (StatusRank(row) <= 1) done.insert(row.value("point_id", std::string()));

  meta_file["fingerprint"] = fingerprint;
  ojson meta = ResultMeta({"dspark-sim sweep", "", kSweepSchemaVersion, config.argv, config.seed});
  meta["executor"] = config.executor;
  meta["created_utc"] = UtcNow();
  if (!meta_file.contains("meta")) meta_file["meta"] = meta;
  std::vector<std::string> impls, modes;
  for (Impl impl : config.impls) impls.emplace_back(ImplKey(impl));
  for (SpecMode mode : config.modes) modes.emplace_back(SpecModeName(mode));
  meta_file["axes"] = {{"workload", config.workloads}, {"trace", config.traces},
                       {"batch_size", config.batch_sizes}, {"num_requests", config.num_requests},
                       {"concurrency", config.concurrency}, {"mode", modes}, {"impl", impls}};
  meta_file["check_impls"] = config.check_impls;
  if (config.model != ModelKind::kV41) meta_file["model"] = std::string(ModelFlag(config.model));
  meta_file["run_args"] = config.run_args;
  ojson planned = ojson::array();
  for (const SweepPoint& p : points) {
    ojson entry = AxesJson(p);
    if (!p.skip_reason.empty()) entry["skip_reason"] = p.skip_reason;
    entry["run_argv"] = p.run_argv;
    planned.push_back(std::move(entry));
  }
  meta_file["points"] = std::move(planned);
  if (!meta_file.contains("invocations")) meta_file["invocations"] = ojson::array();
  ojson invocation = {{"argv", config.argv}, {"started_utc", UtcNow()},
                      {"shard", absl::StrCat(config.shard_index, "/", config.shard_count)},
                      {"resume", config.resume}, {"git_sha", meta["git_sha"]}};
  meta_file["invocations"].push_back(invocation);
  const size_t invocation_index = meta_file["invocations"].size() - 1;
  DS_RETURN_IF_ERROR(WriteFileAtomically(meta_path, meta_file.dump(2) + "\n"));

  // Rows carry the fingerprint's digest.
  SweepConfig row_config = config;
  row_config.fingerprint = digest;
  SweepOutcome outcome;
  outcome.planned = static_cast<int64_t>(points.size());
  std::vector<const SweepPoint*> to_run;
  for (const SweepPoint& p : points) {
    if (!InShard(p, config)) continue;
    ++outcome.in_shard;
    if (done.count(p.id)) {
      ++outcome.already_done;
      continue;
    }
    if (!p.skip_reason.empty()) {
      DS_RETURN_IF_ERROR(AppendLineDurably(log_path, MakeSkippedRow(p, row_config).dump()));
      ++outcome.skipped_invalid;
      progress.Note(absl::StrCat("sweep: skipping ", p.id, ": ", p.skip_reason));
      continue;
    }
    to_run.push_back(&p);
  }
  if (config.resume && outcome.already_done > 0)
    progress.Note(absl::StrFormat("sweep: resuming: %d of this shard's %d points are already in %s",
                                  outcome.already_done, outcome.in_shard, log_path.string()));

  const int64_t will_run = config.max_points > 0 ? std::min<int64_t>(config.max_points, to_run.size())
                                                 : static_cast<int64_t>(to_run.size());
  PointCosts costs;
  std::vector<int64_t> cost(to_run.size(), 0);
  int64_t total_cost = 0;
  if (config.progress != ProgressStyle::kNone)
    for (int64_t i = 0; i < will_run; ++i) total_cost += cost[i] = costs.Of(*to_run[i]);
  Progress run_progress(config.progress, progress_out, will_run, total_cost);
  for (size_t i = 0; i < to_run.size(); ++i) {
    const SweepPoint* p = to_run[i];
    if (config.max_points > 0 && outcome.ran >= config.max_points) {
      outcome.stopped_early = true;
      break;
    }
    run_progress.Starting(*p);
    // A point with no row may have left some of its files when a kill stopped it: its folder
    // must hold this run's files only. It is removed only when it is a real folder of that
    // point's name under OUT/points (a symlink there is refused, never followed).
    if (absl::Status cleared = RemoveOwnFolder(out / "points", p->id); !cleared.ok())
      return absl::Status(cleared.code(), absl::StrCat("cannot clear the folder of point ", p->id,
                                                       " before running it: ", cleared.message()));
    const auto t0 = std::chrono::steady_clock::now();
    // Progress inside a long point: its own `run` meter (stderr only; the results do not
    // depend on it).
    RunConfig point_config = p->config;
    if (run_progress.LongPoint(cost[i])) point_config.progress = run_progress.style();
    absl::StatusOr<RunResult> result = runner(point_config);
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const ojson row = result.ok() ? MakeOkRow(*p, row_config, *result, wall_s)
                                  : MakeFailedRow(*p, row_config, result.status(), wall_s);
    DS_RETURN_IF_ERROR(AppendLineDurably(log_path, row.dump()));
    ++outcome.ran;
    if (!result.ok()) {
      ++outcome.failed;
      run_progress.Note(absl::StrCat("sweep: point ", p->id, " failed: ", result.status().ToString()));
    }
    run_progress.Finished(*p, cost[i], result.ok() ? "ok" : "FAILED", wall_s);
    if (!result.ok() && IsInputError(result.status())) {
      run_progress.End();
      DS_RETURN_IF_ERROR(WriteCsvFromLog(out));
      // Aborted, not the point's own code: the sweep has written its row, so this is a failed
      // sweep (exit 1), not a command line refused before any work (exit 2).
      return absl::AbortedError(absl::StrCat("stopping the sweep: point ", p->id, " failed on its input, which "
                                       "would fail the other points too: ", result.status().message()));
    }
  }
  run_progress.End();

  DS_RETURN_IF_ERROR(WriteCsvFromLog(out));
  ojson& inv = meta_file["invocations"][invocation_index];
  inv["finished_utc"] = UtcNow();
  inv["ran"] = outcome.ran;
  inv["failed"] = outcome.failed;
  inv["stopped_early"] = outcome.stopped_early;
  DS_RETURN_IF_ERROR(WriteFileAtomically(meta_path, meta_file.dump(2) + "\n"));
  return outcome;
}

}  // namespace dspark::sim
