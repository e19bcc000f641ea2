// The real engine's host/GPU timeline of one step, on two clocks (docs/models.md, "Time
// model"). The CPU engine (sim/engine.cc) and the GPU TPOT loop (sim/tpot_loop.cu) charge the
// same terms; only the loop has them happen on a real device.
//
//   host clock h, GPU clock g (when the queued work ends). A step i:
//   1. async scheduling: vLLM's batch queue (EngineCore.step_with_batch_queue) holds at most
//      `inflight_steps` engine steps, so the host starts engine step k once the sampled
//      tokens of engine step k - inflight_steps exist (AsyncOutput's copy_event, recorded
//      after sampling). A DSpark draft step is not an engine step of its own: the V2 runner's
//      sample_tokens runs propose_draft inside the verification's (or prefill's) engine step,
//      so it takes no queue slot and its host work follows its target step's at once;
//   2. h += host_pre_us (scheduling, input preparation, the adaptive budget);
//   3. the metadata builders run eagerly: each of `launches` kernel launches or copies costs
//      dispatch_us_per_launch of host time, and its share of meta_gpu_us (measured as a graph
//      replay) plus gpu_gap_us_per_launch runs on the GPU once dispatched and after what is
//      queued (g = max(g, h) + share + gap);
//   4. each host sync of the builders (`.item()`, a blocking copy) stalls to the end of the
//      queued work: h = max(h, g) + sync_us;
//   5. adaptive verification's allocation and compact_batch: `extra_launches` more eager ops;
//   6. the forward: one graph launch (graph_launch_us of host), then forward_us on the GPU;
//   7. adaptive draft steps: stage_confidences' event.synchronize on the copy the previous
//      draft step recorded (h = max(h, that copy's end) + sync_us), then its
//      stage_launches ops; this step's copy ends with the step's queued work.
//   The step's outputs exist at g.
#pragma once

#include <cstdint>
#include <deque>

namespace dspark::sim {

struct EngineCostParams {
  double dispatch_us_per_launch = 0;  // [us] host cost of one eager kernel launch / copy
  double gpu_gap_us_per_launch = 0;   // [us] GPU time one eager launch adds to its kernel
                                      // (launch gaps a captured graph does not have)
  double sync_us = 0;                 // [us] host cost of one sync once the GPU is done
  double graph_launch_us = 0;         // [us] host cost of one CUDA-graph replay
  int32_t inflight_steps = 1;         // [steps] queued at most (async scheduling depth)
  int32_t compact_launches = 0;       // [launches] allocation + compact_batch, adaptive verify
  int32_t stage_launches = 0;         // [launches] stage_confidences after a draft
};

struct StepWork {
  double host_pre_us = 0;     // [us] host work before the builders
  int32_t launches = 0;       // eager launches of the builders
  double meta_gpu_us = 0;     // [us] GPU time of the builders
  int32_t syncs = 0;          // host syncs of the builders
  int32_t extra_launches = 0; // [launches] adaptive allocation / compaction
  double extra_gpu_us = 0;    // [us] their GPU time
  double forward_us = 0;      // [us] the forward (graph) on the GPU
  bool stage_sync = false;    // an adaptive draft step: stage_confidences
  bool joins_engine_step = false;  // a DSpark draft step: part of its target's engine step
};

struct StepTimes {
  double start_us = 0;  // [us] the host starts the step
  double end_us = 0;    // [us] its outputs exist (GPU done)
  double host_us = 0;   // [us] host busy time of the step (stalls excluded)
  double stall_us = 0;  // [us] host time spent waiting for the GPU
};

class EngineClock {
 public:
  explicit EngineClock(const EngineCostParams& p) : p_(p) {}
  // `now_us` is a lower bound of the host's start (an idle engine waiting for arrivals).
  StepTimes Step(const StepWork& w, double now_us);

 private:
  void Dispatch(int32_t launches, double gpu_us, StepTimes* t);
  void Wait(double until_us, StepTimes* t);

  EngineCostParams p_;
  double h_ = 0, g_ = 0;
  double last_copy_us_ = 0;   // end of the last stage_confidences copy
  std::deque<double> ends_;   // [us] sampled-token ends of the last inflight_steps engine steps
};

}  // namespace dspark::sim
