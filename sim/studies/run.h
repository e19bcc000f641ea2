// One run (`dspark-sim run`, each sweep point): parses run's options into a RunConfig, assembles
// the run (workload, acceptance, time model, engine, executors, observers), replays it and
// writes summary.json, steps.csv and requests.csv (plus perf.json with wall-clock figures, which
// are not deterministic and so kept out of the other files).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sim/engine/check_tally.h"
#include "sim/engine/step_executor.h"
#include "sim/model/scheduler.h"
#include "sim/observe/metrics.h"
#include "sim/observe/serving_result.h"
#include "sim/studies/config.h"
#include "sim/studies/workload.h"

namespace dspark::sim {

// Parses argv (argv[0] is "run") and --config FILE into a RunConfig. When --help is given,
// returns a config and sets *help to the usage text.
absl::StatusOr<RunConfig> ParseRunArgs(int argc, char** argv, std::string* help);

// [bytes] An estimate of what a run keeps for its result as it goes, from its requests: a record
// and the scheduler's state per request (1 KB) and the inter-token gaps per output token (a float,
// with the series' growth: 12 bytes), within about 20 % of the peak RSS of traces of 20k to 3M
// requests. Every steps_csv_stride-th step's record (64 bytes) comes on top; the step count is
// not known before the run. It grows with the trace, not with the check.
uint64_t RunRecordBytes(const std::vector<RequestSpec>& requests);
// RunRecordBytes when it fits available_bytes; ResourceExhausted naming the requests, their output
// tokens, the estimate and what to lower otherwise.
absl::StatusOr<uint64_t> CheckRunRecordMemory(const std::vector<RequestSpec>& requests, uint64_t available_bytes);

// Whether `name` (without dashes) is an option of `run` that takes no value (--no-check):
// `sweep` turns a --config file's `name = true/false` into that switch or its opposite.
bool IsRunSwitch(const std::string& name);

// The scheduler's part of a run's result (summary.json's "scheduler").
struct SchedulerResult {
  int64_t steps = 0;
  double simulated_time_s = 0;
  SchedulerCounters counters;  // preemptions, peak running requests, peak KV blocks
  int32_t kv_blocks = 0;
  std::vector<int32_t> capture_sizes;
};

// The traffic the run replayed, in vLLM's setup keys (num_prompts, request_rate, burstiness,
// max_concurrency) and the workload's request count.
struct RunTraffic {
  int64_t requests = 0;  // requests of the workload as built (summary.json workload.requests)
  double request_rate = 0;  // [req/s]; infinite: no re-timing ("inf")
  double burstiness = 1;
  int32_t max_concurrency = 0;  // 0: no limit (null)
};

// One executor's part of a run's result: what its check counted and its own figures.
struct ExecutorReport {
  std::string name;                // its section of summary.json
  std::optional<CheckTally> check;  // none: it checks nothing
  std::shared_ptr<const ExecutorFigures> figures;  // the executor's type (GpuExecutorFigures); may be null
};

// What a finished run hands its caller (`run`, each sweep point, bench's full run), typed; the
// result files are written from the same values (docs/results-schema.md). New typed sections
// (a model name, what-if labels, the KV pool size) are fields here, written by the summary's
// writer in run.cc.
struct RunResult {
  RunTraffic traffic;
  WorkloadFacts workload;
  std::string acceptance_preset;
  double expected_acceptance_length = 0;  // with all drafts (summary.json acceptance)
  std::vector<std::string> estimated_metadata_costs;  // implementations whose costs are estimates
  // Under adaptive verification, the run's states (checked or timing) whose release never shipped
  // it: {name, what-if text} (AdaptiveVerificationWhatIf); their results describe no release.
  std::vector<std::pair<std::string, std::string>> adaptive_what_ifs;
  ServingResult serving;         // vLLM's result keys
  SpeculativeCounts speculative;  // metrics.speculative
  int64_t preemptions = 0;        // metrics.preemptions
  SchedulerResult scheduler;
  std::vector<ExecutorReport> executors;  // in the order they ran
  int32_t max_model_len = 0;    // the run's: --max-model-len, or the trace's longest request
  int64_t steps = 0;
  double wall_s = 0;       // host wall-clock time of the simulation loop
  double cpu_s = 0;        // the CPU time (all threads, and the check's second process) of the
                           // loop: the steadier figure on a shared machine
  std::string result_file;  // --save-result: where the result JSON went

  // The tally of the first executor that checks (the CPU metadata check, or the GPU executor's
  // check under --executor gpu); nullptr when none checked.
  const CheckTally* check() const;
};

// vLLM's setup keys of `traffic`: num_prompts, request_rate ("inf" when infinite), burstiness,
// max_concurrency (null: no limit). summary.json and sweep rows both write them with this.
nlohmann::json TrafficJson(const RunTraffic& traffic);

// Runs a validated config and writes its outputs into config.out_dir.
absl::StatusOr<RunResult> ExecuteRun(const RunConfig& config);

}  // namespace dspark::sim
