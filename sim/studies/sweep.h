// `dspark-sim sweep`: runs one `run` per point of a grid of axes (workload or trace, batch size,
// request count, concurrency, mode, implementation) and keeps a result log that survives a kill.
//
// Output folder OUT:
//   OUT/sweep.jsonl      one JSON row per finished point, appended and fsync'ed when the point
//                        ends (also rows for invalid combinations, status "skipped");
//   OUT/sweep.csv        the same rows as CSV, one per point id, rewritten at the end;
//   OUT/sweep_meta.json  meta (argv, git SHA, schema version), the axes, the planned points
//                        and one entry per invocation (the first run and each --resume);
//   OUT/points/<id>/     what `run` writes for that point (summary.json, steps.csv, ...).
//
// A point's id is "<slug>_<hash>": the slug names the axes, and the hash covers the point's
// whole resolved run config (RunConfig::ToJson(), so pass-through options and the seed too)
// and the executor. --resume skips every id whose row in sweep.jsonl says "ok" or "skipped".
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sim/studies/run.h"
#include "sim/studies/config.h"

namespace dspark::sim {

inline constexpr int kSweepSchemaVersion = 1;

// ---- Executors: what runs one point (--executor) ----

// Runs one validated point config and writes `run`'s output files into config.out_dir.
using PointRunner = std::function<absl::StatusOr<RunResult>(const RunConfig& config)>;

// Keyed by executor name. "cpu" (ExecuteRun) is registered by sim/studies/sweep_plan.cc; "gpu", in
// CUDA builds, by sim/studies/gpu_point_runner.cu, each with a static RegisterPointRunner.
std::map<std::string, PointRunner>& PointRunners();

struct RegisterPointRunner {
  RegisterPointRunner(const std::string& name, PointRunner runner) {
    PointRunners()[name] = std::move(runner);
  }
};

// NotFound naming the registered executors; for "gpu" it says the build has no GPU executor.
absl::StatusOr<PointRunner> FindPointRunner(const std::string& executor);

// ---- Configuration ----

struct SweepConfig {
  std::vector<std::string> argv;  // as given, for sweep_meta.json
  std::string config_file;
  uint64_t seed = 0;

  // Axes. The workload axis is `workloads` (presets) followed by `traces` (paths).
  std::vector<std::string> workloads;
  std::vector<std::string> traces;
  std::vector<int32_t> concurrency = {1, 8, 128, 1024};  // [requests in flight], 0 = none
  std::vector<int32_t> batch_sizes = {256};              // max_num_seqs [requests]
  ModelKind model = ModelKind::kV41;  // every point's run --model
  std::vector<Impl> impls = ImplsOfModel(ModelKind::kV41);  // each point's --time-impl
  std::vector<SpecMode> modes = {SpecMode::kNone, SpecMode::kDSpark, SpecMode::kAdaptive};
  std::vector<int64_t> num_requests = {kAutoRequests};   // [requests]
  static constexpr int64_t kAutoRequests = -1;  // max(32, 2 x concurrency); run's default at 0

  // --impl: the implementations the metadata check runs at each point: "same" (the point's --time-impl)
  // or a list accepted by `run --impl`.
  std::string check_impls = "same";
  // Any other `run` option, given to every point's run as is (e.g. --no-check, --spec-k 4).
  std::vector<std::string> run_args;

  std::string executor = "cpu";
  std::string out_dir = "results/sweep";
  bool resume = false;
  // This process runs comparison group g (the points that differ only in implementation) when
  // g % shard_count == shard_index, so a shard measures every implementation of its groups.
  int32_t shard_index = 0;
  int32_t shard_count = 1;
  int64_t max_points = -1;  // test hook: stop after this many points were run (-1: no limit)
  ProgressStyle progress = ProgressStyle::kAuto;

  // Set by RunSweep: the digest of what the results are made from, which every row carries.
  std::string fingerprint;

  // --merge DIR...: merge those sweep folders into out_dir instead of running.
  std::vector<std::string> merge_inputs;

  absl::Status Validate() const;
};

// Parses argv (argv[0] is "sweep") and --config FILE. Options that `sweep` does not know are
// kept in run_args. With --help, sets *help to the usage text.
absl::StatusOr<SweepConfig> ParseSweepArgs(int argc, char** argv, std::string* help);

// ---- The plan ----

struct SweepPoint {
  int64_t index = 0;  // position in the full plan, before sharding
  int64_t group = 0;  // comparison group: index / impls.size()
  std::string id;     // "<slug>_<12 hex digits>", also the folder name under OUT/points/
  std::string workload;        // preset name, or "" for a trace
  std::string trace;           // trace path, or ""
  std::string workload_label;  // preset name or the trace file's stem (slug-safe)
  int32_t concurrency = 0;
  int32_t batch_size = 0;
  Impl impl = Impl::kFused;
  SpecMode mode = SpecMode::kAdaptive;
  int64_t num_requests = -1;  // given to run; -1: run's default (the preset's or whole trace)
  std::vector<std::string> run_argv;  // an equivalent `dspark-sim run` command line
  RunConfig config;                   // parsed from run_argv
  std::string skip_reason;            // non-empty: invalid combination (RunConfig::Validate)
};

// Every point of the grid, in order workload, batch size, request count, concurrency, mode,
// implementation (innermost). Invalid combinations are kept, with skip_reason set. A bad
// pass-through option is an error, since it would fail every point.
absl::StatusOr<std::vector<SweepPoint>> PlanSweep(const SweepConfig& config);

bool InShard(const SweepPoint& point, const SweepConfig& config);

// ---- The result log ----

struct SweepLog {
  std::vector<nlohmann::ordered_json> rows;  // in file order
  int64_t valid_bytes = 0;   // length of the prefix made of complete, parseable lines
  bool partial_tail = false;  // the last line was cut short (or unparseable) and is ignored
};

// Reads OUT/sweep.jsonl. A missing file is an empty log. Only the last line may be bad (a
// write cut by a kill); a bad line before it is DataLoss naming the file and line.
absl::StatusOr<SweepLog> ReadSweepLog(const std::string& path);

// One row per point id: "ok" beats "skipped" beats "failed"; among equals the first row wins.
// Ordered by plan index, then id.
std::vector<nlohmann::ordered_json> DedupeRows(const std::vector<nlohmann::ordered_json>& rows);

// Counts of the three kinds of metadata difference (docs/design.md s.6) for `impls`, summed, from
// a run's check tally (RunResult::check(); nullptr: nothing was checked): the steps with at
// least one differing field of each kind, for every executor alike. Returns an object with
// "stale_host", "padding_residue", "bug" (each null when no implementation of `impls` was
// checked) and "by_impl" (the counts of each implementation checked).
nlohmann::ordered_json MetadataCheckCounts(const CheckTally* tally, const std::vector<Impl>& impls);

// The row of a finished point: axes, the run's typed result (its vLLM keys, acceptance, check
// counts) and wall times [s].
nlohmann::ordered_json MakeOkRow(const SweepPoint& point, const SweepConfig& config,
                                 const RunResult& result, double wall_s);
nlohmann::ordered_json MakeSkippedRow(const SweepPoint& point, const SweepConfig& config);
nlohmann::ordered_json MakeFailedRow(const SweepPoint& point, const SweepConfig& config,
                                     const absl::Status& error, double wall_s);

// The CSV of `rows` with a fixed column set (sweep.csv); nested values are left out.
std::string SweepCsv(const std::vector<nlohmann::ordered_json>& rows);

// ---- Running and merging ----

struct SweepOutcome {
  int64_t planned = 0;         // points in the full plan
  int64_t in_shard = 0;        // of them, this shard's
  int64_t already_done = 0;    // found in sweep.jsonl (--resume)
  int64_t ran = 0;             // executed by this invocation
  int64_t failed = 0;          // of `ran`, how many failed
  int64_t skipped_invalid = 0; // invalid combinations recorded by this invocation
  bool stopped_early = false;  // --max-points reached
};

// Runs (or resumes) the sweep. Progress goes to `progress_out` (normally stderr; nullptr: none).
// A point that fails is recorded ("failed", with the error) and the sweep goes on, unless the
// error is about its inputs (InvalidArgument, NotFound, PermissionDenied: a bad option value or
// trace would fail every point), which stops the sweep with that error after recording the row.
absl::StatusOr<SweepOutcome> RunSweep(const SweepConfig& config, std::FILE* progress_out);

struct MergeOutcome {
  int64_t rows = 0;                  // point ids in the merged log
  int64_t duplicates = 0;            // rows dropped because their id was already merged
  std::vector<std::string> missing;  // planned (per the inputs' sweep_meta.json), absent
};

// Merges shard folders into `out_dir` (which must not hold a sweep yet): rows deduplicated by
// point id, point folders copied, sweep.csv and sweep_meta.json written.
absl::StatusOr<MergeOutcome> MergeSweeps(const std::vector<std::string>& inputs,
                                         const std::string& out_dir,
                                         const std::vector<std::string>& argv);

// The subcommand entry point (registered as "sweep").
int SweepCommand(int argc, char** argv);

}  // namespace dspark::sim
