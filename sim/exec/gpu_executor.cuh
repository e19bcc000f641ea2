// The GPU executor (docs/design.md sections 5 and 6): the simulator's step plans through the real
// kernels on the device, timed and checked exactly, step by step.
//
// Per step (GpuExecutor::Execute):
//   1. Stage the plan into the GpuSuite's persistent inputs (one pinned copy). In an adaptive
//      verification the staged query_start_loc is the HOST's (what an engine uploads), and
//      DeviceTopB then runs kernels/topb_alloc.cuh on the device, which rewrites it into the
//      device truth; the executor downloads it (outside any timed region) and requires it to
//      equal the plan's device view, so the host copy the chains read is really stale.
//   2. Run every selected implementation's builder suite the way an engine would: the
//      graph-capturable ones (device-chain, fused, fused-suite) in a CUDA graph per padded size
//      (captured once, on the suite's non-default stream after a warm-up run, then replayed)
//      when the scheduler padded the step, eagerly otherwise (vLLM runs unpadded mixed and
//      prefill batches without a graph); chain and cached always eagerly.
//      Each suite is timed with CUDA events: cold L2 flushes before it (outside the window); an
//      eager suite starts after the flush completes, so its host work and launch latency fall
//      inside the window (sim/exec/gpu_timing.cuh). A graph suite's flush, events and replay are
//      enqueued without waiting for the suites before it; every suite's events are read once
//      after the step's last suite (the windows are on the device's timeline either way).
//   3. Check every implementation against the CPU reference of the device truth (computed
//      once per step, on a worker thread while the suites run), over every defined region. The
//      check's host work runs before the step's events are read, overlapping the GPU's tail; its
//      copies and compare are enqueued after them, so no timed window holds the check and nothing
//      queues behind a suite while it is timed. On the device
//      (kernels/suite/gpu_check.cuh: the reference's region cells uploaded with one copy, one
//      compare kernel counting each region's differing cells, the counts downloaded, one sync;
//      an implementation with a non-zero count has its regions' spans downloaded and compared by
//      CompareSuite, which classifies them). Any "bug" mismatch fails the step with step, case,
//      implementation, builder, field and first index; stale-host divergence and padding residue
//      of chain / cached are counted, separately.
//
// Every function returns absl::Status; CUDA failures name the call, file and line.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/suite/gpu_check.cuh"
#include "kernels/suite/gpu_memory_plan.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/suite.h"
#include "nlohmann/json.hpp"
#include "sim/engine/step_executor.h"
#include "sim/exec/executor_registry.h"
#include "sim/model/scheduler.h"
#include "sim/model/step_plan.h"

namespace dspark::sim {

// The device side of adaptive verification: one step's TopBInputs uploaded with one pinned
// copy, then kernels/topb_alloc.cuh on a stream, rewriting a device query_start_loc in place.
// This object owns device and pinned allocations that are freed exactly once.
class DeviceTopB {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceTopB>> Create(int32_t max_reqs);
  // [bytes] Create allocates for `max_reqs`, on the device and again pinned on the host.
  static size_t Bytes(int32_t max_reqs);
  size_t device_bytes() const { return bytes_; }

  // Enqueues the upload and the kernel on `stream`; `qsl` is device memory [num_reqs + 1].
  // The pinned staging is reused: the caller makes sure the previous Launch's copy finished
  // (GpuSuite::Stage synchronizes the stream, which suffices).
  absl::Status Launch(const TopBInputs& in, int32_t num_reqs, int32_t* qsl, cudaStream_t stream);

  // Downloads qsl [num_reqs + 1] and the kernel's kept counts into the pinned block behind the
  // kernel on `stream`, waits once, and requires them to equal `expected_qsl` (the plan's device
  // view) and its per-request differences.
  absl::Status Verify(const TopBInputs& in, const std::vector<int32_t>& expected_qsl, const int32_t* qsl,
                      cudaStream_t stream, int64_t step);

  int64_t launches() const { return launches_; }

 private:
  DeviceTopB() = default;
  int32_t max_reqs_ = 0;
  size_t scores_off_ = 0, max_drafts_off_ = 0, tail_off_ = 0, kept_off_ = 0, bytes_ = 0;
  DeviceBuffer<uint8_t> device_;
  PinnedBuffer<uint8_t> pinned_;
  int64_t launches_ = 0;
};

// Persistent buffers for every step a scheduler with `config` can plan: capacity
// max(max_num_batched_tokens, largest capture size), requests max(max_num_seqs, largest capture
// size) (graph padding pads the request count to N / q), block-table stride width + pad
// (computed in 64 bits, saturated at the int32 maximum, which no device holds).
GpuSuiteCapacity CapacityFor(const SchedulerConfig& config);

struct GpuExecutorOptions {
  std::vector<Impl> impls;     // implementations run every step, in this order
  GpuSuiteCapacity capacity;
  ModelConsts consts;
  bool cold_l2 = true;         // flush L2 (its size once) before every timed suite
  bool time_steps = true;      // CUDA events around every suite
  bool check = true;           // compare every step (on the device, GpuRegionCheck)
  // Compute the step's CPU reference on a worker thread while the GPU runs the step (outside
  // the GPU's timing; the eager suites' host work runs on the main thread).
  bool overlap_reference = true;
  int device = -1;              // CUDA device ordinal; -1: the current device

  // Test seams: nothing in the product sets them (tests set them through their own factories).
  // At the step whose index (StepPlan::index, 0-based, steps.csv's `step`) equals fault_at_step,
  // after staging, issue a CUDA call that really fails (a device-to-device cudaMemcpyAsync into
  // a null pointer: cudaErrorInvalidValue, not sticky) through the checked path, so the step
  // fails as a CUDA fault does. -1: never.
  int64_t fault_at_step = -1;
  // Called after every step's check, before the step is committed, with the suite whose output
  // buffers hold the step's results (a test's independent oracle reads them); a failure fails
  // the step as the check's would.
  std::function<absl::Status(const StepPlan&, GpuSuite&)> after_check;
};

// Everything Create allocates: PlanGpuSuiteMemory for the distinct implementations, the top-B
// block (device and pinned), and the L2 flush buffer of a device whose L2 holds `l2_bytes` when
// steps are timed with a cold L2. Create checks it against the free device memory first.
absl::StatusOr<GpuMemoryPlan> PlanGpuExecutorMemory(const GpuExecutorOptions& options, size_t l2_bytes);

// Per implementation, over the steps executed: the check's tally (sim/engine/check_tally.h, the
// one every executor keeps: steps, what the suites issued, differences by kind, field and case;
// replays count the captured ops) and the GPU's own figures.
struct ExecutorImplStats {
  ImplTally check;
  int64_t graph_replays = 0;     // padded steps of a graph-capturable implementation
  int64_t eager_runs = 0;
  int64_t captures = 0;          // graphs captured: one per distinct GraphKey
  int64_t distinct_keys = 0;     // distinct GraphKeys among the replays (== captures)
  int64_t graph_nodes = 0;       // nodes of the replayed graphs, summed over replays
  int64_t staging_syncs = 0;     // GpuSuite::Run's sync before an eager host-boundary suite
  std::vector<double> gpu_us;    // [µs] per timed step: CUDA events around the suite
  std::vector<double> host_us;   // [µs] per step: host time of the Run / Replay call
  std::array<std::vector<double>, kNumStepCases> gpu_us_by_case;
  std::string first_stale_host;  // the first stale-host divergence, described
};

// What a run through the executor leaves for its readers beyond the tally (bench's full run):
// the top-B counts and every implementation's figures, in the order they ran.
struct GpuExecutorFigures : ExecutorFigures {
  int64_t steps = 0;
  int64_t topb_launches = 0, topb_stale_steps = 0;
  std::vector<std::pair<Impl, ExecutorImplStats>> impls;
};

class GpuExecutor {
 public:
  // FailedPrecondition without a device; ResourceExhausted, before any allocation, when
  // PlanGpuExecutorMemory does not fit in the free device memory (the message names the total,
  // the largest buffers, the free memory and the options to lower).
  static absl::StatusOr<std::unique_ptr<GpuExecutor>> Create(const GpuExecutorOptions& options);
  ~GpuExecutor();
  GpuExecutor(const GpuExecutor&) = delete;
  GpuExecutor& operator=(const GpuExecutor&) = delete;

  // Runs one step. A failure (a CUDA error, a BUG mismatch) is returned as "gpu executor, step
  // <index> (<case>, R=, N=): <what>: <file>:<line>: <call> failed: ..." and leaves every count,
  // series and row exactly as the previous steps left them (steps() completed steps).
  absl::Status Execute(const StepPlan& plan);

  const ExecutorImplStats& stats(Impl impl) const;
  int64_t steps() const;
  int64_t topb_launches() const;     // adaptive verifications whose allocation ran on the device
  int64_t topb_stale_steps() const;  // of them, steps whose host qsl differed from the device's
  // What the region check moved and computed (its host times are in Summary()).
  RegionCheckStats region_check_stats() const;  // zero without the check
  const GpuMemoryPlan& memory_plan() const;  // what Create checked
  uint64_t device_bytes() const;             // [bytes] held in device allocations now
  // The summary.json section (needs no device: the device facts are read at Create): per implementation, the counts (stale_host, padding_residue, bug:
  // differing cells), timing and launches, overall and per step case.
  nlohmann::json Summary() const;
  // One CSV row per (step, implementation): case, sizes, method (graph / eager), GPU µs, host µs,
  // launches, copies, syncs, and the differing cells of each kind.
  std::string StepsCsv() const;
  // The check's tally and the figures, in options.impls order.
  CheckTally Tally() const;
  std::shared_ptr<const GpuExecutorFigures> Figures() const;

 private:
  struct State;
  explicit GpuExecutor(std::unique_ptr<State> state);
  std::unique_ptr<State> d_;
};

// `run --executor gpu`'s options from the run's request (no device needed).
GpuExecutorOptions GpuExecutorOptionsFor(const ExecutorRequest& request);
// The executor as a stage of the engine (what `run --executor gpu` registers): it writes the
// per-step series into `out_dir` (gpu_steps.csv) and its summary section ("gpu_executor").
absl::StatusOr<std::unique_ptr<StepExecutor>> MakeGpuStepExecutor(const GpuExecutorOptions& options,
                                                                  std::string out_dir);

// Timing samples [µs] as result files give them: median, p10, p90, mean, max, samples.
nlohmann::json GpuUsStatsJson(const std::vector<double>& samples);
// The executor's top-B figures as result files give them (summary.json, bench's full run).
nlohmann::json GpuTopbJson(int64_t launches, int64_t host_qsl_stale_steps);

// The device's part of every meta block (the one writer of these keys: the GPU commands' meta,
// sim/studies/gpu_result_meta.cuh, and the executor's summary section): gpu, device_ordinal,
// compute_capability, sm_count, l2_bytes, driver, cuda_driver_api, cuda_runtime, clocks (peak,
// from the device attributes; current clocks need NVML and are "unknown"), date_utc.
nlohmann::ordered_json GpuMetaJson(int device);

}  // namespace dspark::sim
