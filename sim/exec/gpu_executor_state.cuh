// What the GPU executor's files share (sim/exec/gpu_executor*.cu): its per-step rows, one step's
// delta and the executor's state. Not part of the executor's interface (gpu_executor.cuh).
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/suite/graph_key.h"
#include "kernels/suite/metadata_graph.h"
#include "nlohmann/json.hpp"
#include "sim/exec/gpu_executor.cuh"
#include "sim/exec/gpu_reference_worker.h"
#include "sim/exec/gpu_timing.cuh"

namespace dspark::sim {

namespace gpu_executor_internal {

// [µs] of host wall time since t0.
inline double MicrosSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

struct StepRow {
  int64_t step = 0;
  StepCase step_case = StepCase::kPrefill;
  Impl impl = Impl::kFused;
  bool graph = false;
  int32_t num_reqs = 0, num_tokens = 0;
  double gpu_us = -1, host_us = 0;  // gpu_us -1: not timed
  OpCounters counters;
  bool staging_sync = false;
  std::array<int64_t, 3> cells{};
};

// One step's effects on the executor's counts and series, applied only once the whole step has
// succeeded: a step that fails leaves the results of the steps before it exactly as they were.
struct StepDelta {
  std::map<Impl, ExecutorImplStats> stats;
  std::vector<StepRow> rows;
  std::vector<std::pair<Impl, GraphKey>> keys;  // graph keys replayed
  double stage_us = 0, check_us = 0, reference_us = 0;
  int64_t topb_launches = 0, topb_stale_steps = 0;
};

}  // namespace gpu_executor_internal

struct GpuExecutor::State {
  GpuExecutorOptions options;
  GpuMemoryPlan plan;          // what Create checked against the free device memory
  nlohmann::ordered_json device_meta;  // GpuMetaJson, read at Create: writing results needs no device
  std::unique_ptr<GpuSuite> suite;
  std::unique_ptr<DeviceTopB> topb;
  std::unique_ptr<GpuRegionCheck> check;  // with options.check
  std::unique_ptr<ReferenceWorker> worker;  // with `check` and options.overlap_reference
  std::unique_ptr<timing::L2Flusher> flusher;
  // One per entry of options.impls: a step's graph suites are enqueued back to back and their
  // events read once, after the last suite (an eager suite still waits for its flush first).
  std::vector<std::unique_ptr<timing::EventTimer>> timers;
  std::map<Impl, ExecutorImplStats> stats;
  std::map<Impl, std::set<GraphKey>> keys;  // graph keys replayed so far
  std::map<GraphKey, int64_t> nodes_by_key;    // graph node count of each captured key
  std::vector<gpu_executor_internal::StepRow> rows;
  int64_t steps = 0;
  int64_t topb_launches = 0;
  int64_t topb_stale_steps = 0;
  double stage_us = 0, check_us = 0, reference_us = 0;

  absl::Status RunStep(const StepPlan& plan, gpu_executor_internal::StepDelta& delta);
  // The check of the step just run, in parts placed around the reading of the step's timing
  // events: PrepareCheck does its host work (regions, reference pack, tasks) before the reads,
  // EnqueueCheck puts its copies and compare on the stream behind the last suite after them,
  // FinishCheck waits for them, classifies and counts. `guess` is the
  // plan's device view (the truth unless something rewrote the inputs on the device) and `want`
  // its reference; both must live until FinishCheck returns.
  absl::Status PrepareCheck(const BatchInputs& guess, const SuiteReference* want,
                            gpu_executor_internal::StepDelta& delta);
  absl::Status EnqueueCheck(gpu_executor_internal::StepDelta& delta);
  absl::Status FinishCheck(const StepPlan& plan, gpu_executor_internal::StepDelta& delta);
  void Commit(gpu_executor_internal::StepDelta& delta);
};

}  // namespace dspark::sim
