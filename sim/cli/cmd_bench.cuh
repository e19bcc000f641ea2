// `dspark-sim bench`: the seed's tables on the local GPU (docs/design.md sections 5 and 8).
//
//  (a) Metadata table: the eight seed cases at batch 16 (kernels/suite/cases.h) x every
//      implementation; GPU µs per builder suite (median, p10, p90 over each row's samples, taken
//      until NVBench-style stopping ends the row: BenchConfig) by the
//      graph method and the eager method (sim/studies/metadata_bench.cuh), speedup against chain in the
//      same case and method, launches per suite, the three kinds of difference from the
//      reference, and the empty-kernel floor of each method measured beside every case.
//  (b) Batch-1 TPOT table: batch1-512 (512 in / 128 out, repeated-prompt acceptance) in modes
//      none / dspark / adaptive, per implementation. tpot_ms is the time model's one composition
//      (sim/studies/tpot_loop_model.h, the CPU model's figure) over --tpot-model-samples
//      single-request schedules, with this run's measured metadata µs (section (a), graph
//      method) in place of the calibration's. The GPU TPOT loop (sim/studies/tpot_loop.cuh)
//      runs --tpot-samples of those schedules on the device, interleaved across the
//      implementations, as the check: loop_tpot_ms (median over the samples of each run's mean)
//      beside loop_composed_tpot_ms (the composition's median over the same samples); TTFT /
//      ITL are the loop's medians, throughput all its output tokens over all run durations.
//  (c) --full-run: a speed-8k workload with adaptive verification through the GPU executor
//      (`run --executor gpu`), reporting stale-host divergence, padding residue and bugs per
//      implementation.
// Output: markdown on stdout and in DIR/bench.md (the tables; plots/plot_all.py copies them),
// DIR/bench.json (schema in plots/README.md and below),
// DIR/bench_metadata.csv and DIR/bench_tpot.csv (a "# meta: {json}" first line, then the rows),
// DIR/full_run/ (run's files) with --full-run.
//
// bench.json: {"meta": {...}, "floor_us": {"graph": µs, "eager": µs},
//   "metadata": [{"case", "impl", "method": "graph"|"eager", "gpu_us_median", "gpu_us_p10",
//                 "gpu_us_p90", "samples", "stop_reason": "noise"|"time"|"max_samples",
//                 "noise_pct", "launches", "speedup_vs_chain", "stale_host",
//                 "padding_residue", "bug", ...detail}],
//   "tpot": [{"mode": "none"|"dspark"|"adaptive", "impl", "tpot_ms", "ttft_ms", "itl_ms",
//             "output_tok_s", ...detail}], ...}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/suite.h"
#include "nlohmann/json.hpp"
#include "sim/exec/sample_stopping.h"
#include "sim/model/scheduler.h"

namespace dspark::sim {

inline constexpr int kBenchSchemaVersion = 1;

struct BenchConfig {
  std::vector<std::string> argv;
  std::string out_dir = "results/bench";
  bool cold_l2 = true;
  // Timed samples per metadata row stop NVBench-style (sim/exec/sample_stopping.h): after
  // min_samples once the relative standard error of the mean is <= max_noise_pct, at
  // max_time_s of the row, or at reps samples.
  int reps = 1000;             // [samples] the most per row
  int min_samples = 100;       // [samples]
  double max_noise_pct = 0.5;  // [%] 0: never stop on noise
  double max_time_s = 1.0;     // [s] per row; 0: no limit
  int warmup = 10;   // [samples] dropped first
  // The model layout of the metadata table (--model): DeepSeek-V4.1, or DeepSeek-V4 (its states
  // (a)-(c) as released; the metadata table only).
  ModelKind model = ModelKind::kV41;
  std::vector<Impl> impls = ImplsOfModel(ModelKind::kV41);
  std::vector<SeedCase> cases{std::begin(kAllSeedCases), std::end(kAllSeedCases)};
  int32_t batch = 16;   // [requests] of the metadata cases
  uint64_t seed = 1;
  bool metadata = true;
  bool tpot = true;
  int tpot_samples = 4;  // single-request runs per (mode, implementation) of the GPU TPOT loop (the check)
  int tpot_model_samples = 1000;  // single-request runs per (mode, implementation) of the table's composition (CPU)
  std::vector<SpecMode> tpot_modes = {SpecMode::kNone, SpecMode::kDSpark, SpecMode::kAdaptive};
  bool model_host = true;   // TPOT loop host stand-in
  std::string calibration;  // time model of the TPOT loop; empty: workloads/calibration.json if present
  bool full_run = false;
  int64_t full_run_requests = 16;
  int32_t full_run_concurrency = 16;
  int device = 0;

  absl::Status Validate() const;
  timing::StoppingCriterion Stopping() const;
};

// argv[0] is "bench". With --help, returns a config and sets *help.
absl::StatusOr<BenchConfig> ParseBenchArgs(int argc, char** argv, std::string* help);

struct BenchOutcome {
  nlohmann::ordered_json json;  // what bench.json holds
  std::string markdown;
  std::vector<std::string> bugs;  // rows / runs with a difference that is a bug, described
  std::vector<std::string> warnings;
};

// Runs the bench on the current machine's GPU and writes the files into config.out_dir.
// FailedPrecondition without a CUDA device.
absl::StatusOr<BenchOutcome> RunBench(const BenchConfig& config);

}  // namespace dspark::sim
