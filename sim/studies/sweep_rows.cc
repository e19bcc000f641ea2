// The sweep's result log: reading sweep.jsonl, one row per point id, the rows of a point and
// sweep.csv (sweep.h), and the pieces the run and the merge share (sweep_internal.h).
#include "sim/studies/sweep.h"
#include "sim/studies/sweep_internal.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kernels/common/status_macros.h"
#include "sim/observe/serving_result.h"
#include "sim/results/out_folder.h"
#include "sim/results/result_files.h"
#include "sim/workload/input_file.h"

namespace dspark::sim {
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace sweep_internal {

std::string UtcNow() { return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()); }

int StatusRank(const ojson& row) {
  const std::string status = row.value("status", std::string());
  if (status == "ok") return 0;
  if (status == "skipped") return 1;
  return 2;
}

// Indices of the rows DedupeRows keeps, in its output order.
std::vector<size_t> DedupeIndices(const std::vector<ojson>& rows) {
  std::map<std::string, size_t> best;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string id = rows[i].value("point_id", std::string());
    auto it = best.find(id);
    if (it == best.end() || StatusRank(rows[i]) < StatusRank(rows[it->second])) best[id] = i;
  }
  std::vector<size_t> kept;
  for (const auto& [id, i] : best) kept.push_back(i);
  std::sort(kept.begin(), kept.end(), [&](size_t a, size_t b) {
    const int64_t ia = rows[a].value("index", int64_t{0}), ib = rows[b].value("index", int64_t{0});
    if (ia != ib) return ia < ib;
    return rows[a].value("point_id", std::string()) < rows[b].value("point_id", std::string());
  });
  return kept;
}

ojson AxesJson(const SweepPoint& p) {
  return {{"index", p.index},
          {"group", p.group},
          {"point_id", p.id},
          {"workload", p.workload_label},
          {"trace", p.trace},
          {"concurrency", p.concurrency},
          {"batch_size", p.batch_size},
          {"num_requests", p.num_requests < 0 ? ojson(nullptr) : ojson(p.num_requests)},
          {"mode", std::string(SpecModeName(p.mode))},
          {"impl", std::string(ImplKey(p.impl))}};
}

absl::StatusOr<ojson> ReadJsonFile(const fs::path& path) {
  DS_ASSIGN_OR_RETURN(const std::string text,
                      ReadInputFile(path.string(), "sweep", ResultReadLimits()));
  ojson j = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::DataLossError(absl::StrCat("'", path.string(), "' is not valid JSON"));
  return j;
}

std::string VllmSweepSummary(const std::vector<ojson>& rows) {
  ojson list = ojson::array();
  for (const ojson& row : rows)
    if (row.value("status", std::string()) == "ok") list.push_back(row);
  return list.dump(1) + "\n";
}

absl::Status WriteVllmSweepSummary(const fs::path& dir, const std::vector<ojson>& rows) {
  std::error_code ec;
  const fs::path file = dir / kVllmSummaryName;
  fs::create_directories(file.parent_path(), ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create '", file.parent_path().string(), "': ", ec.message()));
  return WriteFileAtomically(file, VllmSweepSummary(rows));
}

absl::Status WriteCsvFromLog(const fs::path& dir) {
  DS_ASSIGN_OR_RETURN(SweepLog log, ReadSweepLog((dir / kLogName).string()));
  const std::vector<ojson> rows = DedupeRows(log.rows);
  DS_RETURN_IF_ERROR(WriteVllmSweepSummary(dir, rows));
  return WriteFileAtomically(dir / kCsvName, SweepCsv(rows));
}

}  // namespace sweep_internal

namespace {

using namespace sweep_internal;

ojson RowHead(const SweepPoint& p, const SweepConfig& c, const char* status) {
  ojson row;
  row["point_id"] = p.id;
  row["index"] = p.index;
  row["group"] = p.group;
  row["status"] = status;
  row["workload"] = p.workload_label;
  row["trace"] = p.trace;
  row["concurrency"] = p.concurrency;
  row["batch_size"] = p.batch_size;
  row["num_requests"] = p.num_requests < 0 ? ojson(nullptr) : ojson(p.num_requests);
  row["mode"] = std::string(SpecModeName(p.mode));
  row["impl"] = std::string(ImplKey(p.impl));
  std::vector<std::string> checked;
  for (Impl impl : p.config.impls) checked.emplace_back(ImplKey(impl));
  row["check_impls"] = absl::StrJoin(checked, ";");
  row["check"] = p.config.check;
  row["executor"] = c.executor;
  row["seed"] = c.seed;
  row["fingerprint"] = c.fingerprint;  // what the results are made from (sweep_meta.json)
  return row;
}

// Flat columns of sweep.csv, in order. Rows lack the metric columns when not "ok".
const std::vector<std::string>& CsvColumns() {
  static const auto* columns = [] {
    auto* cols = new std::vector<std::string>{
        "point_id", "index", "group", "status", "reason", "error", "workload", "trace",
        "concurrency", "batch_size", "num_requests", "mode", "impl", "check_impls", "check",
        "executor", "seed", "requests", "max_concurrency", "num_prompts", "request_rate", "burstiness"};
    // vLLM's result keys, the one spelling of summary.json and plots/results_io.py.
    for (const std::string& key : ServingColumns()) cols->push_back(key);
    for (const char* col : {"mean_acceptance_length",
                            "acceptance_rate", "preemptions", "steps", "simulated_time_s",
                            "stale_host", "padding_residue", "bug", "sim_wall_s", "wall_s", "out"})
      cols->push_back(col);
    return cols;
  }();
  return *columns;
}

std::string CsvCell(const ojson& v) {
  if (v.is_null()) return "";
  std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  return quoted + "\"";
}

// The fields a reader takes a path or an order from: point_id becomes a folder name under
// points/ (never anything but one safe name), "out" must be that folder, index and status are
// read as what they are.
absl::Status CheckRowNames(const ojson& row, const std::string& path, int64_t line_no) {
  const std::string where = absl::StrFormat("%s:%d", path, line_no);
  if (!row["point_id"].is_string())
    return absl::InvalidArgumentError(absl::StrCat(where, ": point_id: expected a string, got ", Abbreviate(row["point_id"].dump())));
  const std::string id = row["point_id"].get<std::string>();
  DS_RETURN_IF_ERROR(CheckSafeName(id, absl::StrCat(where, ": point_id")));
  if (row.contains("out") && !(row["out"].is_string() && row["out"].get<std::string>() == "points/" + id))
    return absl::InvalidArgumentError(absl::StrCat(where, ": out: expected \"points/", id, "\" (the point's folder), got ",
                                                   Abbreviate(row["out"].dump())));
  if (row.contains("index") && !row["index"].is_number_integer())
    return absl::InvalidArgumentError(absl::StrCat(where, ": index: expected an integer, got ", Abbreviate(row["index"].dump())));
  if (row.contains("status") && !row["status"].is_string())
    return absl::InvalidArgumentError(absl::StrCat(where, ": status: expected a string, got ", Abbreviate(row["status"].dump())));
  return absl::OkStatus();
}

}  // namespace

using namespace sweep_internal;

absl::StatusOr<SweepLog> ReadSweepLog(const std::string& path) {
  SweepLog log;
  std::error_code ec;
  if (!fs::exists(path, ec)) return log;
  DS_ASSIGN_OR_RETURN(const std::string text, ReadInputFile(path, "sweep", ResultReadLimits()));
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    const bool complete = nl != std::string::npos;
    const std::string line = text.substr(pos, complete ? nl - pos : std::string::npos);
    const size_t next = complete ? nl + 1 : text.size();
    const bool last = next >= text.size();
    ojson row = ojson::parse(line, nullptr, /*allow_exceptions=*/false);
    const bool good = complete && !row.is_discarded() && row.is_object() && row.contains("point_id");
    if (!good) {
      if (last) {
        log.partial_tail = true;
        break;
      }
      return absl::DataLossError(absl::StrFormat(
          "%s:%d: not a complete sweep row (only the last line may be cut short by a kill); "
          "fix or delete that line", path, line_no));
    }
    DS_RETURN_IF_ERROR(CheckRowNames(row, path, line_no));
    log.rows.push_back(std::move(row));
    pos = next;
    log.valid_bytes = static_cast<int64_t>(pos);
  }
  return log;
}

std::vector<ojson> DedupeRows(const std::vector<ojson>& rows) {
  std::vector<ojson> out;
  for (size_t i : DedupeIndices(rows)) out.push_back(rows[i]);
  return out;
}

ojson MetadataCheckCounts(const CheckTally* tally, const std::vector<Impl>& impls) {
  ojson out = {{"stale_host", nullptr}, {"padding_residue", nullptr}, {"bug", nullptr}, {"by_impl", ojson::object()}};
  if (tally == nullptr) return out;
  for (Impl impl : impls) {
    const ImplTally* t = tally->Find(impl);
    if (t == nullptr) continue;
    ojson found = ojson::object();
    for (int k = 0; k < kNumMismatchKinds; ++k) {
      const char* kind = kMismatchKindKeys[k];
      found[kind] = t->steps_with[k];
      out[kind] = out[kind].is_null() ? found[kind] : ojson(out[kind].get<int64_t>() + t->steps_with[k]);
    }
    out["by_impl"][std::string(ImplKey(impl))] = found;
  }
  return out;
}

ojson MakeOkRow(const SweepPoint& p, const SweepConfig& c, const RunResult& result, double wall_s) {
  ojson row = RowHead(p, c, "ok");
  row["requests"] = result.traffic.requests;
  // vLLM's names of the point's traffic (`vllm bench serve` result keys, as its sweep rows have
  // them): max_concurrency (null: no limit), num_prompts, request_rate ("inf") and burstiness.
  const nlohmann::json traffic = TrafficJson(result.traffic);
  for (const char* key : {"max_concurrency", "num_prompts", "request_rate", "burstiness"}) row[key] = ojson(traffic[key]);
  // The run's vLLM keys: the fixed columns (null when not reported), then any other percentile
  // asked for.
  const nlohmann::json serving = ServingResultJson(result.serving);
  for (const std::string& key : ServingColumns()) {
    auto it = serving.find(key);
    row[key] = it == serving.end() ? ojson(nullptr) : ojson(*it);
  }
  for (const auto& [key, value] : serving.items())
    if (IsServingKey(key) && !row.contains(key)) row[key] = ojson(value);
  row["mean_acceptance_length"] = result.speculative.mean_acceptance_length;
  row["acceptance_rate"] = result.speculative.acceptance_rate;
  row["preemptions"] = result.preemptions;
  row["steps"] = result.steps;
  row["simulated_time_s"] = result.scheduler.simulated_time_s;
  ojson counts = MetadataCheckCounts(result.check(), p.config.impls);
  row["stale_host"] = counts["stale_host"];
  row["padding_residue"] = counts["padding_residue"];
  row["bug"] = counts["bug"];
  if (!counts["by_impl"].empty()) row["check_by_impl"] = counts["by_impl"];
  row["sim_wall_s"] = result.wall_s;
  row["wall_s"] = wall_s;
  row["out"] = (fs::path("points") / p.id).string();
  return row;
}

ojson MakeSkippedRow(const SweepPoint& p, const SweepConfig& c) {
  ojson row = RowHead(p, c, "skipped");
  row["reason"] = p.skip_reason;
  return row;
}

ojson MakeFailedRow(const SweepPoint& p, const SweepConfig& c, const absl::Status& error, double wall_s) {
  ojson row = RowHead(p, c, "failed");
  row["error"] = error.ToString();
  row["wall_s"] = wall_s;
  row["out"] = (fs::path("points") / p.id).string();
  return row;
}

std::string SweepCsv(const std::vector<ojson>& rows) {
  std::string out = absl::StrJoin(CsvColumns(), ",") + "\n";
  for (const ojson& row : rows) {
    std::vector<std::string> cells;
    for (const std::string& col : CsvColumns())
      cells.push_back(row.contains(col) ? CsvCell(row[col]) : std::string());
    absl::StrAppend(&out, absl::StrJoin(cells, ","), "\n");
  }
  return out;
}

}  // namespace dspark::sim
