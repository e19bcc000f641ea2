#include "sim/studies/sweep.h"
#include "sim/results/git_info.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kernels/common/status_macros.h"
#include "sim/exec/cuda_device.h"
#include "sim/workload/generators.h"
#include "sim/results/result_files.h"
#include "sim/model/time_model.h"
#include "sim/workload/input_file.h"
#include "sim/observe/serving_result.h"

namespace dspark::sim {
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::map<std::string, PointRunner>& PointRunners() {
  static auto* runners = new std::map<std::string, PointRunner>();
  return *runners;
}

namespace {

const RegisterPointRunner kCpuRunner("cpu", [](const RunConfig& c) { return ExecuteRun(c); });

constexpr char kLogName[] = "sweep.jsonl";
constexpr char kCsvName[] = "sweep.csv";
constexpr char kMetaName[] = "sweep_meta.json";

ojson GitInfo() {
  const GitRevision rev = ReadGitRevision();
  if (!rev.known) return {{"git_sha", "unknown"}, {"git_dirty", nullptr}};
  return {{"git_sha", rev.sha}, {"git_dirty", rev.dirty}};
}

std::string UtcNow() { return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()); }

// FNV-1a, 64 bit: stable across builds and standard libraries (std::hash is not).
uint64_t Fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string SlugSafe(const std::string& text) {
  std::string out;
  for (char c : text) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return out.empty() ? "_" : out;
}

absl::Status TruncateFile(const fs::path& path, int64_t bytes) {
  std::error_code ec;
  fs::resize_file(path, static_cast<uintmax_t>(bytes), ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot truncate '", path.string(), "': ", ec.message()));
  return absl::OkStatus();
}

// summary.json value at a path of keys; null when any key is absent.
ojson At(const nlohmann::json& j, std::initializer_list<const char*> keys) {
  const nlohmann::json* node = &j;
  for (const char* key : keys) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return ojson::parse(node->dump());
}

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
  return row;
}

// Flat columns of sweep.csv, in order. Rows lack the metric columns when not "ok".
const std::vector<std::string>& CsvColumns() {
  static const auto* columns = [] {
    auto* cols = new std::vector<std::string>{
        "point_id", "index", "group", "status", "reason", "error", "workload", "trace",
        "concurrency", "batch_size", "num_requests", "mode", "impl", "check_impls", "check",
        "executor", "seed", "requests"};
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

// ---- Progress ----

std::string FormatDuration(double seconds) {
  if (seconds < 60) return absl::StrFormat("%.1fs", seconds);
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm%02ds", s / 3600, (s / 60) % 60, s % 60);
}

std::string Describe(const SweepPoint& p) {
  return absl::StrFormat("%s c=%d b=%d %s %s", p.workload_label, p.concurrency, p.batch_size,
                         SpecModeName(p.mode), ImplKey(p.impl));
}

class Progress {
 public:
  Progress(ProgressStyle style, std::FILE* out, int64_t total)
      : out_(out), total_(total), t0_(std::chrono::steady_clock::now()) {
    style_ = style;
    if (style_ == ProgressStyle::kAuto)
      style_ = (out_ != nullptr && isatty(fileno(out_))) ? ProgressStyle::kBar : ProgressStyle::kLines;
    if (out_ == nullptr) style_ = ProgressStyle::kNone;
  }

  void Note(const std::string& line) {
    if (style_ == ProgressStyle::kNone) return;
    if (style_ == ProgressStyle::kBar && bar_shown_) std::fprintf(out_, "\r\033[K");
    std::fprintf(out_, "%s\n", line.c_str());
    if (style_ == ProgressStyle::kBar && bar_shown_) DrawBar(current_);
    std::fflush(out_);
  }

  void Starting(const SweepPoint& p) {
    current_ = Describe(p);
    if (style_ == ProgressStyle::kBar) DrawBar(current_);
  }

  void Finished(const SweepPoint& p, const std::string& status, double seconds) {
    ++done_;
    if (style_ == ProgressStyle::kLines) {
      std::fprintf(out_, "sweep: [%lld/%lld] %s %s (%s) in %s | elapsed %s, ETA %s\n",
                   static_cast<long long>(done_), static_cast<long long>(total_), status.c_str(),
                   p.id.c_str(), Describe(p).c_str(), FormatDuration(seconds).c_str(),
                   FormatDuration(Elapsed()).c_str(), Eta().c_str());
      std::fflush(out_);
    } else if (style_ == ProgressStyle::kBar) {
      if (status != "ok") Note(absl::StrCat("sweep: ", status, " ", p.id));
      DrawBar(current_);
    }
  }

  void End() {
    if (style_ == ProgressStyle::kBar && bar_shown_) {
      std::fprintf(out_, "\n");
      std::fflush(out_);
    }
  }

 private:
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  // Assumes the remaining points cost the mean of the finished ones.
  std::string Eta() const {
    if (done_ == 0) return "?";
    return FormatDuration(Elapsed() / static_cast<double>(done_) * static_cast<double>(total_ - done_));
  }
  void DrawBar(const std::string& current) {
    constexpr int kWidth = 28;
    const int filled = total_ > 0 ? static_cast<int>(kWidth * done_ / total_) : kWidth;
    const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '-');
    std::fprintf(out_, "\r\033[K[%s] %lld/%lld %3.0f%% elapsed %s ETA %s | %s", bar.c_str(),
                 static_cast<long long>(done_), static_cast<long long>(total_),
                 total_ > 0 ? 100.0 * done_ / total_ : 100.0, FormatDuration(Elapsed()).c_str(),
                 Eta().c_str(), done_ < total_ ? current.c_str() : "done");
    std::fflush(out_);
    bar_shown_ = true;
  }

  std::FILE* out_;
  ProgressStyle style_;
  int64_t total_, done_ = 0;
  std::chrono::steady_clock::time_point t0_;
  std::string current_;
  bool bar_shown_ = false;
};

absl::StatusOr<ojson> ReadJsonFile(const fs::path& path) {
  DS_ASSIGN_OR_RETURN(const std::string text,
                      ReadInputFile(path.string(), "sweep", ResultReadLimits()));
  ojson j = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::DataLossError(absl::StrCat("'", path.string(), "' is not valid JSON"));
  return j;
}

// Errors in the inputs (a bad option value, a missing or malformed trace) would repeat at
// every point; anything else (e.g. a metadata check that found a bug) is that point's result.
bool IsInputError(const absl::Status& s) {
  return absl::IsInvalidArgument(s) || absl::IsNotFound(s) || absl::IsPermissionDenied(s);
}

// Copies the folder `from` to `to` through a temporary folder beside `to`, so a kill leaves `to`
// absent or whole, never with a file cut short.
absl::Status CopyFolderWhole(const fs::path& from, const fs::path& to) {
  const fs::path tmp = AtomicTempPath(to, static_cast<long>(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!ec) fs::copy(from, tmp, fs::copy_options::recursive, ec);
  if (!ec) fs::remove_all(to, ec);
  if (!ec) fs::rename(tmp, to, ec);
  if (ec) {
    std::error_code cleanup;
    fs::remove_all(tmp, cleanup);
    return absl::Status(absl::ErrnoToStatusCode(ec.value()), absl::StrCat("cannot copy '", from.string(), "' to '",
                                                                          to.string(), "': ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteCsvFromLog(const fs::path& dir) {
  DS_ASSIGN_OR_RETURN(SweepLog log, ReadSweepLog((dir / kLogName).string()));
  return WriteFileAtomically(dir / kCsvName, SweepCsv(DedupeRows(log.rows)));
}

}  // namespace

absl::StatusOr<PointRunner> FindPointRunner(const std::string& executor) {
  auto it = PointRunners().find(executor);
  if (it != PointRunners().end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [name, runner] : PointRunners()) names.push_back(name);
  if (executor == "gpu") {
    const std::string reason = NoCudaDeviceReason();
    return absl::NotFoundError(absl::StrCat(
        "--executor gpu: ", reason.empty() ? "" : reason + ": ",
        "GPU executor not available in this build (no point runner named 'gpu' is registered; available: ",
        absl::StrJoin(names, ", "), "); use --executor cpu"));
  }
  return absl::NotFoundError(absl::StrCat("--executor: unknown executor '", executor,
                                          "'; available: ", absl::StrJoin(names, ", ")));
}

absl::Status SweepConfig::Validate() const {
  if (out_dir.empty()) return absl::InvalidArgumentError("--out: expected a directory");
  if (!merge_inputs.empty()) return absl::OkStatus();
  if (workloads.empty() && traces.empty())
    return absl::InvalidArgumentError("give at least one --workload or --trace");
  if (concurrency.empty()) return absl::InvalidArgumentError("--concurrency: expected at least one value");
  if (batch_sizes.empty()) return absl::InvalidArgumentError("--batch-size: expected at least one value");
  if (impls.empty()) return absl::InvalidArgumentError("--impl: expected at least one implementation");
  if (modes.empty()) return absl::InvalidArgumentError("--mode: expected at least one mode");
  if (num_requests.empty()) return absl::InvalidArgumentError("--num-requests: expected at least one value");
  for (int32_t c : concurrency)
    if (c < 0) return absl::InvalidArgumentError(absl::StrCat("--concurrency: expected values >= 0, got ", c));
  for (int32_t b : batch_sizes)
    if (b < 1) return absl::InvalidArgumentError(absl::StrCat("--batch-size: expected values >= 1, got ", b));
  for (int64_t n : num_requests)
    if (n < 1 && n != kAutoRequests)
      return absl::InvalidArgumentError(absl::StrCat("--num-requests: expected values >= 1 or auto, got ", n));
  if (shard_count < 1 || shard_index < 0 || shard_index >= shard_count)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--shard: expected i/n with n >= 1 and 0 <= i < n, got %d/%d", shard_index, shard_count));
  if (max_points == 0 || max_points < -1)
    return absl::InvalidArgumentError(absl::StrCat("--max-points: expected >= 1, got ", max_points));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SweepPoint>> PlanSweep(const SweepConfig& c) {
  DS_RETURN_IF_ERROR(c.Validate());
  struct WorkloadAxis {
    std::string preset, trace, label;
  };
  std::vector<WorkloadAxis> workloads;
  for (const std::string& w : c.workloads) {
    if (auto preset = FindWorkloadPreset(w); !preset.ok())
      return absl::InvalidArgumentError(absl::StrCat("--workload: ", preset.status().message()));
    workloads.push_back({w, "", SlugSafe(w)});
  }
  for (const std::string& t : c.traces) workloads.push_back({"", t, SlugSafe(fs::path(t).stem().string())});

  std::vector<SweepPoint> points;
  std::set<std::string> ids;
  for (const WorkloadAxis& w : workloads)
    for (int32_t batch : c.batch_sizes)
      for (int64_t requested : c.num_requests)
        for (int32_t conc : c.concurrency)
          for (SpecMode mode : c.modes)
            for (Impl impl : c.impls) {
              SweepPoint p;
              p.index = static_cast<int64_t>(points.size());
              p.group = p.index / static_cast<int64_t>(c.impls.size());
              p.workload = w.preset;
              p.trace = w.trace;
              p.workload_label = w.label;
              p.concurrency = conc;
              p.batch_size = batch;
              p.impl = impl;
              p.mode = mode;
              // The seed's SPEED-Bench rule; with no client limit, the run's own default.
              p.num_requests = requested != SweepConfig::kAutoRequests ? requested
                               : conc > 0 ? std::max<int64_t>(32, 2 * int64_t{conc})
                                          : -1;
              std::vector<std::string> args = {"run"};
              args.insert(args.end(), c.run_args.begin(), c.run_args.end());
              if (!w.preset.empty()) args.insert(args.end(), {"--workload", w.preset});
              else args.insert(args.end(), {"--trace", w.trace});
              args.insert(args.end(), {"--concurrency", std::to_string(conc), "--max-num-seqs",
                                       std::to_string(batch), "--mode", std::string(SpecModeName(mode)),
                                       "--time-impl", std::string(ImplKey(impl)), "--impl",
                                       c.check_impls == "same" ? std::string(ImplKey(impl)) : c.check_impls,
                                       "--seed", std::to_string(c.seed)});
              if (p.num_requests > 0) args.insert(args.end(), {"--num-requests", std::to_string(p.num_requests)});
              std::vector<char*> argv;
              for (std::string& a : args) argv.push_back(a.data());
              std::string help;
              auto parsed = ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
              if (!parsed.ok())
                return absl::InvalidArgumentError(absl::StrCat(
                    "the options given to every point's run are not valid: ", parsed.status().message(),
                    " (run command line: dspark-sim ", absl::StrJoin(args, " "), ")"));
              p.config = std::move(*parsed);
              const ojson identity = {{"run", p.config.ToJson()}, {"executor", c.executor}};
              const std::string slug = absl::StrFormat(
                  "%s_c%d_b%d_n%s_%s_%s", w.label, conc, batch,
                  p.num_requests > 0 ? std::to_string(p.num_requests) : std::string("default"),
                  SpecModeName(mode), ImplKey(impl));
              p.id = absl::StrFormat("%s_%012x", slug, Fnv1a64(identity.dump()) & 0xffffffffffffull);
              if (!ids.insert(p.id).second)
                return absl::InvalidArgumentError(absl::StrCat(
                    "two points have the same id '", p.id, "': an axis lists the same value twice"));
              p.config.out_dir = (fs::path(c.out_dir) / "points" / p.id).string();
              args.insert(args.end(), {"--out", p.config.out_dir});
              p.config.argv = args;
              p.run_argv = std::move(args);
              if (auto valid = p.config.Validate(); !valid.ok()) p.skip_reason = std::string(valid.message());
              points.push_back(std::move(p));
            }
  return points;
}

bool InShard(const SweepPoint& point, const SweepConfig& config) {
  return point.group % config.shard_count == config.shard_index;
}

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

ojson MetadataCheckCounts(const nlohmann::json& summary, const std::vector<std::string>& impls) {
  static constexpr const char* kKinds[] = {"stale_host", "padding_residue", "bug"};
  ojson out = {{"stale_host", nullptr}, {"padding_residue", nullptr}, {"bug", nullptr}, {"by_impl", ojson::object()}};
  auto section = summary.find("metadata_check");
  if (section == summary.end() || !section->is_object()) return out;
  const nlohmann::json* per_impl = &*section;
  if (auto it = section->find("impls"); it != section->end() && it->is_object()) per_impl = &*it;
  for (const std::string& impl : impls) {
    auto entry = per_impl->find(impl);
    if (entry == per_impl->end() || !entry->is_object()) continue;
    ojson found = ojson::object();
    for (const char* kind : kKinds) {
      if (auto v = entry->find(kind); v != entry->end() && v->is_number_integer()) {
        found[kind] = v->get<int64_t>();
        continue;
      }
      auto by_case = entry->find("by_case");
      if (by_case == entry->end() || !by_case->is_object()) continue;
      bool any = false;
      int64_t sum = 0;
      for (const auto& [name, counts] : by_case->items()) {
        if (!counts.is_object()) continue;
        if (auto v = counts.find(kind); v != counts.end() && v->is_number_integer()) {
          sum += v->get<int64_t>();
          any = true;
        }
      }
      if (any) found[kind] = sum;
    }
    for (const char* kind : kKinds)
      if (found.contains(kind))
        out[kind] = out[kind].is_null() ? found[kind] : ojson(out[kind].get<int64_t>() + found[kind].get<int64_t>());
    out["by_impl"][impl] = found;
  }
  return out;
}

ojson MakeOkRow(const SweepPoint& p, const SweepConfig& c, const RunResult& result, double wall_s) {
  const nlohmann::json& s = result.summary;
  ojson row = RowHead(p, c, "ok");
  row["requests"] = At(s, {"workload", "requests"});
  // The summary's vLLM keys as they are: the fixed columns, then any other percentile asked for.
  for (const std::string& key : ServingColumns()) row[key] = At(s, {key.c_str()});
  for (const auto& [key, value] : s.items())
    if (IsServingKey(key) && !row.contains(key)) row[key] = value;
  row["mean_acceptance_length"] = At(s, {"metrics", "speculative", "mean_acceptance_length"});
  row["acceptance_rate"] = At(s, {"metrics", "speculative", "acceptance_rate"});
  row["preemptions"] = At(s, {"metrics", "preemptions"});
  row["steps"] = result.steps;
  row["simulated_time_s"] = At(s, {"scheduler", "simulated_time_s"});
  std::vector<std::string> checked;
  for (Impl impl : p.config.impls) checked.emplace_back(ImplKey(impl));
  ojson counts = MetadataCheckCounts(s, checked);
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
  std::error_code ec;
  fs::create_directories(out / "points", ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("--out: cannot create '", out.string(), "': ", ec.message()));
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
  Progress progress(config.progress, progress_out, 0);
  if (log.partial_tail) {
    DS_RETURN_IF_ERROR(TruncateFile(log_path, log.valid_bytes));
    progress.Note(absl::StrCat("sweep: dropped a cut-short last line of ", log_path.string(),
                               " (a point that was being recorded when the sweep stopped)"));
  }
  std::set<std::string> done;
  for (const ojson& row : log.rows)
    if (StatusRank(row) <= 1) done.insert(row.value("point_id", std::string()));

  // sweep_meta.json: the first invocation's meta stays; each invocation is appended.
  const fs::path meta_path = out / kMetaName;
  ojson meta_file;
  if (config.resume && fs::exists(meta_path)) {
    DS_ASSIGN_OR_RETURN(meta_file, ReadJsonFile(meta_path));
  }
  ojson meta = {{"schema_version", kSweepSchemaVersion}, {"tool", "dspark-sim sweep"},
                {"argv", config.argv}, {"seed", config.seed}, {"executor", config.executor},
                {"created_utc", UtcNow()}};
  meta.update(GitInfo());
  if (!meta_file.contains("meta")) meta_file["meta"] = meta;
  std::vector<std::string> impls, modes;
  for (Impl impl : config.impls) impls.emplace_back(ImplKey(impl));
  for (SpecMode mode : config.modes) modes.emplace_back(SpecModeName(mode));
  meta_file["axes"] = {{"workload", config.workloads}, {"trace", config.traces},
                       {"batch_size", config.batch_sizes}, {"num_requests", config.num_requests},
                       {"concurrency", config.concurrency}, {"mode", modes}, {"impl", impls}};
  meta_file["check_impls"] = config.check_impls;
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
      DS_RETURN_IF_ERROR(AppendLineDurably(log_path, MakeSkippedRow(p, config).dump()));
      ++outcome.skipped_invalid;
      progress.Note(absl::StrCat("sweep: skipping ", p.id, ": ", p.skip_reason));
      continue;
    }
    to_run.push_back(&p);
  }
  if (config.resume && outcome.already_done > 0)
    progress.Note(absl::StrFormat("sweep: resuming: %d of this shard's %d points are already in %s",
                                  outcome.already_done, outcome.in_shard, log_path.string()));

  Progress run_progress(config.progress, progress_out,
                        config.max_points > 0 ? std::min<int64_t>(config.max_points, to_run.size())
                                              : static_cast<int64_t>(to_run.size()));
  for (const SweepPoint* p : to_run) {
    if (config.max_points > 0 && outcome.ran >= config.max_points) {
      outcome.stopped_early = true;
      break;
    }
    run_progress.Starting(*p);
    // A point with no row may have left some of its files when a kill stopped it: its folder
    // must hold this run's files only.
    fs::remove_all(p->config.out_dir, ec);
    if (ec)
      return absl::Status(absl::ErrnoToStatusCode(ec.value()),
                          absl::StrCat("cannot clear '", p->config.out_dir, "' before running its point: ", ec.message()));
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<RunResult> result = runner(p->config);
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const ojson row = result.ok() ? MakeOkRow(*p, config, *result, wall_s)
                                  : MakeFailedRow(*p, config, result.status(), wall_s);
    DS_RETURN_IF_ERROR(AppendLineDurably(log_path, row.dump()));
    ++outcome.ran;
    if (!result.ok()) {
      ++outcome.failed;
      run_progress.Note(absl::StrCat("sweep: point ", p->id, " failed: ", result.status().ToString()));
    }
    run_progress.Finished(*p, result.ok() ? "ok" : "FAILED", wall_s);
    if (!result.ok() && IsInputError(result.status())) {
      run_progress.End();
      DS_RETURN_IF_ERROR(WriteCsvFromLog(out));
      return absl::Status(result.status().code(),
                          absl::StrCat("stopping the sweep: point ", p->id, " failed on its input, which "
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

  std::vector<ojson> rows;
  std::vector<size_t> source_of_row;
  ojson merged_from = ojson::array();
  std::map<std::string, ojson> planned;  // id -> planned point entry
  for (size_t s = 0; s < inputs.size(); ++s) {
    const fs::path dir(inputs[s]);
    DS_ASSIGN_OR_RETURN(SweepLog log, ReadSweepLog((dir / kLogName).string()));
    ojson source = {{"dir", inputs[s]}, {"rows", log.rows.size()}, {"cut_short_last_line_ignored", log.partial_tail}};
    if (fs::exists(dir / kMetaName)) {
      DS_ASSIGN_OR_RETURN(ojson meta, ReadJsonFile(dir / kMetaName));
      source["meta"] = meta.value("meta", ojson());
      source["invocations"] = meta.value("invocations", ojson::array());
      if (meta.contains("points") && meta["points"].is_array())
        for (const ojson& p : meta["points"]) planned.emplace(p.value("point_id", std::string()), p);
    }
    merged_from.push_back(std::move(source));
    for (ojson& row : log.rows) {
      rows.push_back(std::move(row));
      source_of_row.push_back(s);
    }
  }

  fs::create_directories(out / "points", ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("--out: cannot create '", out_dir, "': ", ec.message()));
  for (const fs::path& dir : {out, out / "points"}) DS_RETURN_IF_ERROR(RemoveStaleTempFiles(dir).status());
  MergeOutcome outcome;
  std::string log_text;
  std::set<std::string> present;
  const std::vector<size_t> kept = DedupeIndices(rows);
  for (size_t i : kept) {
    const ojson& row = rows[i];
    const std::string id = row.value("point_id", std::string());
    if (StatusRank(row) <= 1) present.insert(id);
    const fs::path from = fs::path(inputs[source_of_row[i]]) / "points" / id;
    if (fs::is_directory(from)) DS_RETURN_IF_ERROR(CopyFolderWhole(from, out / "points" / id));
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
  ojson meta = {{"schema_version", kSweepSchemaVersion}, {"tool", "dspark-sim sweep --merge"},
                {"argv", argv}, {"created_utc", UtcNow()}};
  meta.update(GitInfo());
  ojson planned_list = ojson::array();
  std::vector<ojson> planned_sorted;
  for (const auto& [id, entry] : planned) planned_sorted.push_back(entry);
  std::sort(planned_sorted.begin(), planned_sorted.end(), [](const ojson& a, const ojson& b) {
    return a.value("index", int64_t{0}) < b.value("index", int64_t{0});
  });
  for (ojson& e : planned_sorted) planned_list.push_back(std::move(e));
  const ojson meta_file = {{"meta", meta}, {"merged_from", merged_from}, {"points", planned_list},
                           {"duplicates_dropped", outcome.duplicates}, {"missing", outcome.missing}};
  DS_RETURN_IF_ERROR(WriteFileAtomically(out / kMetaName, meta_file.dump(2) + "\n"));
  return outcome;
}

}  // namespace dspark::sim
