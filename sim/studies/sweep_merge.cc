// Merging sweep folders (shards) into one: rows deduplicated by point id, point folders copied
// whole (sweep.h).
#include "sim/studies/sweep.h"
#include "sim/studies/sweep_internal.h"
#include "sim/results/result_meta.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "kernels/common/status_macros.h"
#include "sim/results/out_folder.h"
#include "sim/results/result_files.h"

namespace dspark::sim {
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using namespace sweep_internal;

namespace {

// Refuses a point folder of an input that holds anything but folders and regular files: a
// symlink would make the copy read (and the merged folder point) outside the inputs.
absl::Status CheckCopyable(const fs::path& from) {
  DS_RETURN_IF_ERROR(CheckRealFolder(from, "--merge: point folder", /*absent_ok=*/false));
  std::error_code ec;
  for (fs::recursive_directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_symlink(st) || !(fs::is_directory(st) || fs::is_regular_file(st)))
      return absl::FailedPreconditionError(absl::StrCat(
          "--merge: '", it->path().string(), "' is ", fs::is_symlink(st) ? "a symlink" : "not a regular file or folder",
          "; a sweep writes only files and folders, so this input was changed by hand: remove it or merge without it"));
  }
  if (ec)
    return absl::Status(absl::ErrnoToStatusCode(ec.value()),
                        absl::StrCat("--merge: cannot list '", from.string(), "': ", ec.message()));
  return absl::OkStatus();
}

// Copies the folder `from` to `to` (which must not exist) through a temporary folder beside it,
// so a kill leaves `to` absent or whole, never with a file cut short. Removes only that
// temporary folder, which it made.
absl::Status CopyFolderWhole(const fs::path& from, const fs::path& to) {
  DS_RETURN_IF_ERROR(CheckCopyable(from));
  const fs::path tmp = AtomicTempPath(to, static_cast<long>(::getpid()));
  std::error_code ec;
  if (fs::exists(fs::symlink_status(to, ec)) || fs::exists(fs::symlink_status(tmp, ec)))
    return absl::FailedPreconditionError(absl::StrCat("--merge: '", to.string(), "' is already there"));
  fs::copy(from, tmp, fs::copy_options::recursive, ec);
  if (!ec) fs::rename(tmp, to, ec);
  if (ec) {
    std::error_code cleanup;
    fs::remove_all(tmp, cleanup);
    return absl::Status(absl::ErrnoToStatusCode(ec.value()), absl::StrCat("cannot copy '", from.string(), "' to '",
                                                                          to.string(), "': ", ec.message()));
  }
  return absl::OkStatus();
}

// The merge writes into a new folder, or an empty one: it never replaces or removes what it
// did not write itself.
absl::Status CheckEmptyOut(const fs::path& out) {
  DS_RETURN_IF_ERROR(CheckRealFolder(out, "--out", /*absent_ok=*/true));
  std::error_code ec;
  if (!fs::exists(out, ec)) return absl::OkStatus();
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == kOutLockName) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        "--out: '", out.string(), "' is not empty (it holds '", name, "'); merge into a new or empty folder"));
  }
  if (ec)
    return absl::Status(absl::ErrnoToStatusCode(ec.value()),
                        absl::StrCat("--out: cannot list '", out.string(), "': ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MergeOutcome> MergeSweeps(const std::vector<std::string>& inputs, const std::string& out_dir,
                                         const std::vector<std::string>& argv) {
  if (inputs.empty()) return absl::InvalidArgumentError("--merge: expected at least one sweep folder");
  if (out_dir.empty()) return absl::InvalidArgumentError("--out: expected a directory");
  const fs::path out(out_dir);
  std::error_code ec;
  for (const std::string& in : inputs) {
    if (!fs::exists(fs::path(in) / kLogName))
      return absl::NotFoundError(absl::StrCat("--merge: '", in, "' holds no ", kLogName));
    if (fs::exists(out) && fs::equivalent(fs::path(in), out, ec))
      return absl::InvalidArgumentError(absl::StrCat("--out '", out_dir, "' is one of the --merge inputs"));
  }
  if (fs::exists(out / kLogName) && fs::file_size(out / kLogName, ec) > 0)
    return absl::FailedPreconditionError(
        absl::StrCat("--out: '", (out / kLogName).string(), "' already exists; merge into a new folder"));
  DS_RETURN_IF_ERROR(CheckEmptyOut(out));
  // An input still being written (a shard that runs) would be merged in part.
  for (const std::string& in : inputs) DS_RETURN_IF_ERROR(OutFolderLock::CheckNotHeld(in, "--merge input"));
  DS_ASSIGN_OR_RETURN(const OutFolderLock out_lock, OutFolderLock::Acquire(out, "sweep --merge"));
  DS_RETURN_IF_ERROR(CheckEmptyOut(out));  // again, now that no other dspark-sim can write it

  std::vector<ojson> rows;
  std::vector<size_t> source_of_row;
  ojson merged_from = ojson::array();
  std::map<std::string, ojson> planned;  // id -> planned point entry
  ojson common_fingerprint;
  for (size_t s = 0; s < inputs.size(); ++s) {
    const fs::path dir(inputs[s]);
    DS_RETURN_IF_ERROR(CheckRealFolder(dir / "points", "--merge", /*absent_ok=*/true));
    DS_ASSIGN_OR_RETURN(SweepLog log, ReadSweepLog((dir / kLogName).string()));
    ojson source = {{"dir", inputs[s]}, {"rows", log.rows.size()}, {"cut_short_last_line_ignored", log.partial_tail}};
    if (fs::exists(dir / kMetaName)) {
      DS_ASSIGN_OR_RETURN(ojson meta, ReadJsonFile(dir / kMetaName));
      if (!meta.is_object())
        return absl::InvalidArgumentError(absl::StrCat((dir / kMetaName).string(), ": expected a JSON object"));
      source["meta"] = meta.value("meta", ojson());
      source["fingerprint"] = meta.value("fingerprint", ojson());
      source["invocations"] = meta.value("invocations", ojson::array());
      if (meta.contains("points") && meta["points"].is_array())
        for (const ojson& p : meta["points"]) {
          const std::string where = absl::StrCat((dir / kMetaName).string(), ": points[", planned.size(), "]");
          if (!p.is_object() || !p.contains("point_id") || !p["point_id"].is_string())
            return absl::InvalidArgumentError(absl::StrCat(where, ": expected an object with a string point_id"));
          DS_RETURN_IF_ERROR(CheckSafeName(p["point_id"].get<std::string>(), absl::StrCat(where, ".point_id")));
          if (p.contains("index") && !p["index"].is_number_integer())
            return absl::InvalidArgumentError(absl::StrCat(where, ".index: expected an integer"));
          planned.emplace(p["point_id"].get<std::string>(), p);
        }
    }
    // Shards of one sweep only: each input's rows carry its fingerprint's digest, and every
    // input's fingerprint is the first one's.
    const ojson fingerprint = fs::exists(dir / kMetaName) ? source["fingerprint"] : ojson();
    if (!fingerprint.is_object() || !fingerprint.contains("digest"))
      return absl::FailedPreconditionError(absl::StrCat(
          "--merge: '", inputs[s], "' has no fingerprint in its ", kMetaName,
          " (it was made by an older dspark-sim, or not by a sweep), so what its rows were made from is unknown; "
          "run that shard again with this dspark-sim into a new folder"));
    for (size_t r = 0; r < log.rows.size(); ++r)
      if (log.rows[r].value("fingerprint", ojson()) != fingerprint["digest"])
        return absl::FailedPreconditionError(absl::StrCat(
            "--merge: ", (dir / kLogName).string(), ":", r + 1, " has fingerprint ",
            log.rows[r].value("fingerprint", ojson()).dump(), " but its ", kMetaName, " says ",
            fingerprint["digest"].dump(), ": that folder mixes results of different inputs; run it again into a new folder"));
    if (s == 0) {
      common_fingerprint = fingerprint;
    } else if (const std::string differs = FingerprintDifference(common_fingerprint, fingerprint); !differs.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--merge: '", inputs[s], "' was made from other inputs than '", inputs[0], "': ", differs,
          ". Merge only shards of one sweep (the same options, traces, calibration and code): run that shard "
          "again as the others were, or merge it separately"));
    }
    merged_from.push_back(std::move(source));
    for (ojson& row : log.rows) {
      rows.push_back(std::move(row));
      source_of_row.push_back(s);
    }
  }

  fs::create_directories(out / "points", ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("--out: cannot create '", out_dir, "': ", ec.message()));
  DS_RETURN_IF_ERROR(CheckRealFolder(out / "points", "--out", /*absent_ok=*/false));
  MergeOutcome outcome;
  std::string log_text;
  std::set<std::string> present;
  const std::vector<size_t> kept = DedupeIndices(rows);
  for (size_t i : kept) {
    const ojson& row = rows[i];
    const std::string id = row.value("point_id", std::string());
    if (StatusRank(row) <= 1) present.insert(id);
    // ReadSweepLog let only safe names through: `id` is one path component.
    const fs::path from = fs::path(inputs[source_of_row[i]]) / "points" / id;
    if (fs::exists(fs::symlink_status(from, ec))) DS_RETURN_IF_ERROR(CopyFolderWhole(from, out / "points" / id));
    absl::StrAppend(&log_text, row.dump(), "\n");
  }
  outcome.rows = static_cast<int64_t>(kept.size());
  outcome.duplicates = static_cast<int64_t>(rows.size() - kept.size());
  std::vector<std::pair<int64_t, std::string>> missing;
  for (const auto& [id, entry] : planned)
    if (!present.count(id)) missing.emplace_back(entry.value("index", int64_t{0}), id);
  std::sort(missing.begin(), missing.end());
  for (const auto& [index, id] : missing) outcome.missing.push_back(id);

  DS_RETURN_IF_ERROR(WriteFileAtomically(out / kLogName, log_text));
  std::vector<ojson> kept_rows;
  for (size_t i : kept) kept_rows.push_back(rows[i]);
  DS_RETURN_IF_ERROR(WriteFileAtomically(out / kCsvName, SweepCsv(kept_rows)));
  DS_RETURN_IF_ERROR(WriteVllmSweepSummary(out, kept_rows));
  ojson meta = ResultMeta({"dspark-sim sweep --merge", "", kSweepSchemaVersion, argv, std::nullopt});
  meta["created_utc"] = UtcNow();
  ojson planned_list = ojson::array();
  std::vector<ojson> planned_sorted;
  for (const auto& [id, entry] : planned) planned_sorted.push_back(entry);
  std::sort(planned_sorted.begin(), planned_sorted.end(), [](const ojson& a, const ojson& b) {
    return a.value("index", int64_t{0}) < b.value("index", int64_t{0});
  });
  for (ojson& e : planned_sorted) planned_list.push_back(std::move(e));
  const ojson meta_file = {{"meta", meta}, {"fingerprint", common_fingerprint}, {"merged_from", merged_from}, {"points", planned_list},
                           {"duplicates_dropped", outcome.duplicates}, {"missing", outcome.missing}};
  DS_RETURN_IF_ERROR(WriteFileAtomically(out / kMetaName, meta_file.dump(2) + "\n"));
  return outcome;
}

}  // namespace dspark::sim
