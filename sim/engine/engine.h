// The simulation engine: it owns the clock and the client, asks the scheduler (a model) for
// each step, times it with the time model, builds its arrays once and runs the executors on
// them, shows it to the observers, and commits it.
//
// Client (like `vllm bench serve`): request i arrives at its arrival_s; with a concurrency
// limit C > 0 it is submitted when one of C slots is free (a semaphore: the slot freed earliest
// is taken first), so its submission time is max(arrival, slot free time). Without a limit
// (C = 0) it is submitted at its arrival. Latencies are measured from submission. Ties are
// broken by (time, workload order), and the workload is sorted by (arrival_s, id).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/status/status.h"
#include "sim/model/acceptance.h"
#include "sim/engine/step_executor.h"
#include "sim/engine/step_observer.h"
#include "sim/model/scheduler.h"
#include "sim/model/time_model.h"
#include "sim/workload/trace.h"

namespace dspark::sim {

struct EngineOptions {
  int32_t concurrency = 0;        // C [requests in flight], 0 = unlimited
  Impl time_impl = Impl::kFused;  // implementation whose metadata cost times the steps
  bool check_kv_each_step = false;  // full KV consistency check after every step (tests)
  // Nonzero: finish the step in progress, then stop; Run returns Cancelled naming the signal
  // (sim/engine/stop_signal.h). Read once per step.
  const std::atomic<int>* stop = nullptr;
};

class Engine final : public SchedulerEvents {
 public:
  Engine(const SchedulerConfig& scheduler_config, const std::vector<RequestSpec>& workload,
         const AcceptanceModel& acceptance, const TimeModel& time_model,
         const EngineOptions& options, uint64_t seed);

  // Run in the order they were added: every executor, then every observer, each step.
  void AddExecutor(StepExecutor* executor) { executors_.push_back(executor); }
  void AddObserver(StepObserver* observer) { observers_.push_back(observer); }
  absl::Status Run();

  int64_t steps() const { return steps_; }
  double now_s() const { return now_s_; }
  int64_t finished() const { return finished_; }
  const Scheduler& scheduler() const { return scheduler_; }
  const std::vector<RequestSpec>& workload() const { return workload_; }

  void OnTokens(int32_t req, double time_s, int32_t tokens) override;
  void OnVerification(int32_t req, int32_t proposed, int32_t verified, int32_t accepted) override;
  void OnFinished(int32_t req, double time_s) override;
  void OnPreempted(int32_t req, double time_s) override;
  void OnOutcomes(double time_s, const RequestOutcome* outcomes, size_t n) override;

 private:
  void ReleaseArrivals();

  const std::vector<RequestSpec>& workload_;
  const TimeModel& time_model_;
  EngineOptions options_;
  Scheduler scheduler_;
  std::vector<StepExecutor*> executors_;
  std::vector<StepObserver*> observers_;
  std::deque<double> free_slots_;  // [s] times at which the free client slots were freed
  size_t next_ = 0;
  int32_t in_flight_ = 0;
  int64_t finished_ = 0;
  int64_t steps_ = 0;
  double now_s_ = 0.0;
};

}  // namespace dspark::sim
