// Options of `dspark-sim run`, parsed from the command line (and --config FILE, same keys)
// by ParseRunArgs (sim/studies/run.h) for `run` and each sweep point, then checked by Validate().
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/batch.h"
#include "nlohmann/json.hpp"
#include "sim/model/scheduler.h"
#include "sim/workload/trace.h"
#include "sim/observe/progress.h"
#include "sim/observe/serving_result.h"

namespace dspark::sim {

// Most requests a preset may generate: each costs a few hundred bytes in the workload, the
// scheduler and the metrics (about 1 GB at this count).
inline constexpr int64_t kMaxGeneratedRequests = int64_t{1} << 22;
// Smallest --burstiness (gamma shape of the inter-arrival gaps) whose draws do not underflow.
inline constexpr double kMinBurstiness = 1e-3;

// The implementation that times a run's steps when --time-impl is not given: on DeepSeek-V4.1 the
// seed's After (vllm-0.31), on DeepSeek-V4 its newest release's state (vllm-0.29).
Impl DefaultTimeImpl(ModelKind model);

struct RunConfig {
  std::vector<std::string> argv;  // as given, for summary.json meta
  std::string config_file;

  uint64_t seed = 0;
  // Workload: exactly one of a trace file or a preset.
  std::string trace_path;
  std::string workload;
  TraceFormat trace_format = TraceFormat::kAuto;
  bool skip_bad_rows = false;
  OverLength over_length = OverLength::kError;  // trace rows beyond max_model_len
  // false: --max-model-len was not given, so a trace whose longest request (prompt + output) is
  // longer raises it to that length (ExecuteRun announces it; the limits of Validate still hold).
  bool max_model_len_given = true;
  // [GB, 10^9 bytes] --kv-gb: the KV pool by memory, at kKvBytesPerToken (sim/model/kv_cache.h);
  // ExecuteRun turns it into scheduler.num_kv_blocks once max_model_len is known. 0: not given.
  double kv_gb = 0;
  // The blocks of scheduler.block_size tokens that kv_gb holds, the null block among them.
  int64_t KvGbBlocks() const;
  double time_scale = 1.0;  // a trace's arrival times are multiplied by this (0.5: twice as fast)
  int32_t concurrency = -1;     // [requests in flight]; -1: the workload's default, 0: none
  // [requests/s] Any infinite value (inf, Inf, infinity, 1e999: parsed, never compared as
  // text) means no re-timing, as in vLLM: a trace keeps its timestamps, and generated or
  // length-only requests all arrive at t=0. A finite rate re-times every request.
  double request_rate = std::numeric_limits<double>::infinity();
  bool request_rate_given = false;  // a finite --request-rate was given
  double burstiness = 1.0;      // gamma shape of inter-arrival gaps (1 = Poisson)
  int64_t num_requests = -1;    // -1: the preset's default, or the whole trace

  // Speculation and scheduler limits (mode, K, max_num_seqs, ... live in `scheduler`).
  SchedulerConfig scheduler;
  std::string acceptance_preset;  // empty: the workload's
  std::string acceptance_curve;   // "p1,...,pK": overrides the preset's curve
  double confidence_concentration = 0;  // kappa of the confidence Beta; 0: the preset's

  // The model layout (--model): its releases' states run and check the steps, and its KV block
  // size is the scheduler's (ModelConstsFor).
  ModelKind model = ModelKind::kV41;
  // Metadata implementations: checked each step (when `check`), and the one that times steps.
  std::string impl_list = "all";
  std::vector<Impl> impls;
  Impl time_impl = Impl::kFused;
  bool check = true;
  // Where each step's metadata runs: "cpu" (the emulated check above, modelled costs) or "gpu"
  // (sim/exec/gpu_executor.cu: every step through the kernels on the device, timed and compared).
  std::string executor = "cpu";
  bool gpu_cold_l2 = true;  // executor gpu: flush L2 before every timed suite
  std::string calibration;  // time-model calibration JSON; empty: workloads/calibration.json
                            // when present, else the defaults

  // The serving result (sim/observe/serving_result.h) and vLLM's --save-result file.
  ResultSpec result_spec;
  bool save_result = false;      // also write the result JSON to result_dir/result_filename
  std::string result_dir;        // empty: out_dir
  std::string result_filename;   // empty: vLLM's pattern without the date (ResultFilename())

  // Output.
  std::string out_dir = "results/run";
  std::string step_log;            // per-step arrays as text (small runs)
  std::string dump_workload;       // write the built workload as JSONL here
  std::string dump_steps;          // write every step's arrays and references here (.npy + index.json)
  int64_t dump_steps_limit = 1000; // [steps] at most this many are dumped
  std::string dump_av;             // write every adaptive verification step as JSONL here
  int64_t dump_av_steps = 0;       // [steps] --dump-av covers the first this many (0: all)
  int64_t steps_csv_stride = 1;    // write every n-th step to steps.csv
  bool check_kv_each_step = false; // full KV consistency check after every step
  // stderr only, never in summary.json (so not in ToJson); sweep points run without.
  ProgressStyle progress = ProgressStyle::kNone;
  // Processes of the CPU check (--jobs; 0: CheckProcess::DefaultJobs, decided when the check
  // starts); results are identical for any value, so not in ToJson.
  int32_t jobs = 1;
  // Builder-level deduplication of the CPU check (--no-dedup: off); results are identical either
  // way, so not in ToJson.
  bool dedup = true;
  std::string what_if;  // run --what-if: a labelled what-if executor (sim/exec/what_if_executor.h), "" for none
  // --what-if-57207: the released vLLM states also build #57207's FP8 prefill segmentation, which
  // no release has (ModelConsts::what_if_57207). A labelled what-if: summary.json's config says so.
  bool what_if_57207 = false;
  bool check_invariants = false;   // sim/observe/invariants.h on every step (section "invariants")
  // Hold the advisory lock of out_dir (sim/results/out_folder.h) while the run writes there:
  // `dspark-sim run` sets it; a sweep point does not (the sweep holds its --out's). Not in ToJson.
  bool lock_out = false;

  absl::Status Validate() const;
  // --save-result's file name: vLLM's "{label}-{rate}qps[-concurrency{C}]-{model}-{date}.json"
  // without the date (results are deterministic): "dspark-sim-infqps-concurrency4-chat.json".
  std::string ResultFilename(int32_t concurrency) const;
  nlohmann::json ToJson() const;
};

}  // namespace dspark::sim
