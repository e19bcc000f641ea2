// The TPOT-like loop on a GPU (docs/design.md section 5): the real simulator schedules each step on
// the host, the chosen implementation builds its metadata on the device the way an engine
// would, and a "forward stand-in" kernel occupies the GPU for the time model's forward time.
// TTFT, TPOT, ITL and throughput come from real wall-clock time, as `vllm bench serve`
// defines them (sim/observe/metrics.h), so an implementation's syncs cost what they cost.
//
// Per step i, on the host, with the CPU time model's terms (TimeModel::Work and
// sim/model/engine_clock.h, charged here for real when model_host is on):
//   0. async scheduling's depth: wait for step i - inflight_steps's event;
//   1. Scheduler::Plan and the step's arrays (real host work), then, with model_host, a host
//      spin up to the time model's pre-builder host time of the step (sched + per request +
//      DSpark + adaptive budget: what a Python engine spends there), counted from the step's
//      start;
//   2. GpuSuite::Stage into suite i % kTpotLoopSuites (Stage synchronizes its suite's stream, so
//      it waits for step i - 4: with DSpark's draft steps that is the target step two engine
//      steps back, which the batch queue waits for anyway; with two suites it was the previous
//      engine step's, which took away the host's head start during a prefill, 1 point of the
//      batch-1 DSpark reduction). The suite's stream then waits for step i - 1's forward (an
//      event), so the device runs the steps strictly in order;
//   3. adaptive verification: the top-B allocation kernel rewrites the staged host qsl;
//   4. the metadata: a graph replay when the step is padded and the implementation is
//      graph-capturable, else the eager suite (chain / cached: GpuSuite::Run synchronizes the
//      stream first, i.e. waits for step i - 1's forward, as a host-boundary path must);
//      then, with model_host, a spin kernel of the eager launches' GPU gaps (launches x
//      gpu_gap_us_per_launch, behind the metadata as the engine clock puts them) and a host spin
//      until the Python dispatch of its eager launches (and compact_batch's) plus the graph
//      launch would be done;
//   5. the forward stand-in kernel (forward_us of the time model, plus adaptive_gpu_us on
//      adaptive steps), then an event marking the step's
//      outputs; an adaptive draft step then syncs on the previous draft step's event
//      (stage_confidences) and spins its sync and ops;
//   6. Scheduler::Commit: the step's outcome is simulated, so the host may plan step i + 1
//      while the device still runs step i.
// Token times are the completion times of their step's event (engine timestamps; the client's
// stream transport is not modelled). A request's completion frees a client slot only once the
// host has seen it: the host waits for that step's event (a "client sync"), and the next
// request is submitted at that host time (closed loop at `concurrency`).
//
// Before the timed loop the same workload is scheduled once without forward work, staging every
// step into every suite and capturing every graph the run will need, so no capture falls inside
// the timing (late_captures counts any that still do).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/metadata_graph.h"
#include "kernels/suite/suite.h"
#include "nlohmann/json.hpp"
#include "sim/model/acceptance.h"
#include "sim/exec/gpu_executor.cuh"
#include "sim/model/scheduler.h"
#include "sim/model/time_model.h"
#include "sim/workload/trace.h"

namespace dspark::sim {

struct TpotLoopOptions {
  Impl impl = Impl::kFused;
  SchedulerConfig scheduler;
  AcceptanceParams acceptance;
  TimeModelParams time_params;
  int32_t concurrency = 1;  // [requests] client slots; 0: every request submitted at the start
  bool model_host = true;   // host stand-in spins (see the file comment)
  bool warm_up = true;      // capture every graph before the timed loop
  uint64_t seed = 0;
};

struct TpotLoopResult {
  nlohmann::json metrics;          // sim/observe/metrics.h section from real times (ttft_ms, tpot_ms, ...)
  double ttft_ms_mean = 0;
  double tpot_ms_mean = 0;
  double tpot_ms_median = 0;
  double itl_ms_mean = 0;
  double e2el_ms_mean = 0;
  double output_tok_s = 0;         // output tokens / (last finish - first submission)
  double duration_s = 0;
  double mean_acceptance_length = 0;
  int64_t completed = 0;
  int64_t output_tokens = 0;
  int64_t steps = 0;
  int64_t impl_host_syncs = 0;     // syncs the implementation's ops issued (OpCounters)
  int64_t staging_syncs = 0;       // GpuSuite::Run's sync before an eager host-boundary suite
  int64_t client_syncs = 0;        // waits for a finished request's step (closed-loop client)
  int64_t stage_syncs = 0;         // adaptive draft steps' stage_confidences event syncs
  int64_t graph_replays = 0;
  int64_t eager_runs = 0;
  int64_t late_captures = 0;       // graphs captured inside the timed loop (0 after warm-up)
  int64_t topb_launches = 0;
  double host_us_per_step = 0;     // [µs] host time from Plan to the forward launch, mean
  double forward_us_per_step = 0;  // [µs] requested forward stand-in time, mean
  double launches_per_step = 0;
};

inline constexpr int kTpotLoopSuites = 4;

// kTpotLoopSuites GpuSuites and their top-B allocators, reused across runs (graphs persist per key).
class TpotLoop {
 public:
  static absl::StatusOr<std::unique_ptr<TpotLoop>> Create(const GpuSuiteCapacity& capacity,
                                                          const ModelConsts& consts = {});
  ~TpotLoop();
  TpotLoop(const TpotLoop&) = delete;
  TpotLoop& operator=(const TpotLoop&) = delete;

  // `workload` sorted by (arrival, id); arrival times are ignored (closed loop).
  absl::StatusOr<TpotLoopResult> Run(const TpotLoopOptions& options, const std::vector<RequestSpec>& workload);

 private:
  struct State;
  explicit TpotLoop(std::unique_ptr<State> state);
  std::unique_ptr<State> d_;
};

// Launches the forward stand-in: one thread spinning on %globaltimer for `duration_us`.
absl::Status LaunchForwardStandIn(double duration_us, cudaStream_t stream);

// [µs] CUDA-event time of one stand-in of `duration_us` (after one untimed launch): the check
// that the stand-in lasts what it is asked to.
absl::StatusOr<double> MeasureForwardStandIn(double duration_us, cudaStream_t stream);

}  // namespace dspark::sim
