// The executors a run can use, each registered from its own file (the CPU metadata check in
// sim/exec/cpu_executor.cc; the GPU executor, in CUDA builds, in sim/exec/gpu_executor.cu).
// A run (sim/studies/run.cc) asks every registered factory, in the declared order, for an
// executor; a factory returns nullptr when the request does not ask for its executor.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/batch.h"
#include "sim/engine/step_executor.h"
#include "sim/model/scheduler.h"

namespace dspark::sim {

// What a run asks of its executors: the narrow part of the run's options they read.
struct ExecutorRequest {
  std::vector<Impl> impls;    // implementations run on every step (run --impl)
  bool check = true;          // run --check: the emulated implementations against the reference
  int32_t jobs = 1;           // run --jobs: processes of the CPU check, 0 its default (results do not depend on it)
  bool dedup = true;          // run --no-dedup turns off the CPU check's builder deduplication
  std::string device = "cpu"; // run --executor: "cpu", or "gpu" for every step on the device too
  bool gpu_cold_l2 = true;    // executor gpu: flush L2 before every timed suite
  SchedulerConfig scheduler;  // sizes the executors' buffers
  std::string out_dir;        // where an executor writes its own files (e.g. gpu_steps.csv)
  std::string dump_dir;       // run --dump-steps: the step dump's folder, empty for none
  int64_t dump_limit = 0;     // [steps] run --dump-steps-limit
  std::string what_if;        // run --what-if: "record-av-graphs", "record-av-graphs-at-first-step" or ""
  ModelConsts consts;         // the model's constants and its what-ifs (run --what-if-57207)
  nlohmann::json meta;        // the run's meta block (argv, seed, git), for files executors write
};

using ExecutorFactory = std::function<absl::StatusOr<std::unique_ptr<StepExecutor>>(const ExecutorRequest&)>;

struct ExecutorRegistration {
  std::string name;  // e.g. "metadata-check"
  int order = 0;     // executors run in increasing order (ties: name)
  ExecutorFactory factory;
};

// Sorted by (order, name).
std::vector<ExecutorRegistration> RegisteredExecutors();
bool HasExecutor(const std::string& name);

struct RegisterExecutor {
  RegisterExecutor(std::string name, int order, ExecutorFactory factory);
};

// The declared order of the built-in executors: the device first, then the CPU check.
inline constexpr int kGpuExecutorOrder = 10;
inline constexpr int kCpuExecutorOrder = 20;

}  // namespace dspark::sim
