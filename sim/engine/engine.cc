#include "sim/engine/engine.h"
#include "sim/engine/stop_signal.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "sim/model/engine_clock.h"
#include "sim/workload/trace.h"

namespace dspark::sim {

Engine::Engine(const SchedulerConfig& scheduler_config, const std::vector<RequestSpec>& workload,
               const AcceptanceModel& acceptance, const TimeModel& time_model,
               const EngineOptions& options, uint64_t seed)
    : workload_(workload),
      time_model_(time_model),
      options_(options),
      scheduler_(scheduler_config, workload, acceptance, time_model, seed) {
  scheduler_.set_events(this);
  // A limit above the request count never binds: one slot per request is the same client,
  // and --concurrency 2147483647 must not allocate 2^31 slots.
  const int64_t slots = std::min<int64_t>(options_.concurrency, static_cast<int64_t>(workload.size()));
  for (int64_t i = 0; i < slots; ++i) free_slots_.push_back(0.0);
}

void Engine::ReleaseArrivals() {
  while (next_ < workload_.size() && workload_[next_].arrival_s <= now_s_) {
    double submit = workload_[next_].arrival_s;
    if (options_.concurrency > 0) {
      if (free_slots_.empty()) break;
      submit = std::max(submit, free_slots_.front());
      free_slots_.pop_front();
    }
    ++in_flight_;
    const int32_t req = static_cast<int32_t>(next_++);
    scheduler_.Submit(req);
    for (StepObserver* o : observers_) o->OnArrival(req, submit);
  }
}

absl::Status Engine::Run() {
  for (size_t i = 1; i < workload_.size(); ++i)
    if (workload_[i].arrival_s < workload_[i - 1].arrival_s)
      return absl::InvalidArgumentError("engine: workload must be sorted by arrival time");
  const bool spec = scheduler_.config().mode != SpecMode::kNone;
  now_s_ = 0.0;
  for (StepObserver* o : observers_) o->OnStart(*this);
  ReleaseArrivals();
  StepPlan plan;
  // The host and GPU timelines (sim/engine_clock.h). now_s_ is when the last step's outputs
  // exist, the time the scheduler's events happen at; an idle engine waits for an arrival.
  EngineClock clock(time_model_.params().engine);
  double idle_until_s = 0.0;
  while (true) {
    if (!scheduler_.HasWork()) {
      if (next_ >= workload_.size()) break;
      now_s_ = std::max(now_s_, workload_[next_].arrival_s);
      idle_until_s = now_s_;
      ReleaseArrivals();
      continue;
    }
    if (options_.stop != nullptr)
      if (const int signal = options_.stop->load(std::memory_order_relaxed); signal != 0)
        return absl::CancelledError(absl::StrFormat("stopped by %s after %d steps (%d of %d requests finished)",
                                                    StopSignalName(signal), steps_, finished_, workload_.size()));
    plan = StepPlan();
    plan.index = steps_;
    DS_RETURN_IF_ERROR(scheduler_.Plan(now_s_, &plan));
    const StepWork work = time_model_.Work(plan, options_.time_impl, spec);
    const StepTimes t = clock.Step(work, idle_until_s * 1e6);
    // A finite but huge (or tiny divisor) cost in the time model can put a step's end at inf,
    // NaN or past where a double still resolves 1 us; every time after it would be meaningless,
    // so the run stops here instead of reporting such latencies as a result.
    if (!(t.end_us >= 0.0 && t.end_us * 1e-6 < kMaxArrivalS) || !(t.start_us >= 0.0) ||
        !std::isfinite(t.host_us))
      return absl::OutOfRangeError(absl::StrFormat(
          "step %d (%s): the time model puts its end at %g s (forward %g us, metadata %g us, host %g us, "
          "%d launches); expected a finite time below 2^33 s = %.0f s, where a double still resolves 1 us: "
          "a cost of the time model (--calibration, or its defaults) is too large or not a number",
          plan.index, StepCaseName(plan.step_case), t.end_us * 1e-6, work.forward_us,
          work.meta_gpu_us + work.extra_gpu_us, t.host_us, work.launches + work.extra_launches, kMaxArrivalS));
    plan.start_s = t.start_us * 1e-6;
    plan.end_s = std::max(t.end_us * 1e-6, now_s_);
    plan.gpu_us = work.meta_gpu_us + work.extra_gpu_us + work.forward_us;
    plan.host_us = t.host_us;
    if (!executors_.empty()) {
      // An error here is a simulator bug (see StepPlan::Arrays); the executors would all see it.
      absl::StatusOr<const StepArrays*> arrays = plan.Arrays();
      if (!arrays.ok())
        return absl::Status(arrays.status().code(),
                            absl::StrFormat("step %d (%s): building the step's arrays: %s", plan.index,
                                            StepCaseName(plan.step_case), arrays.status().message()));
      for (StepExecutor* e : executors_) DS_RETURN_IF_ERROR(e->Execute(plan, **arrays));
    }
    for (StepObserver* o : observers_) DS_RETURN_IF_ERROR(o->OnStep(plan));
    scheduler_.Commit(plan.end_s);
    now_s_ = plan.end_s;
    ++steps_;
    if (options_.check_kv_each_step) DS_RETURN_IF_ERROR(scheduler_.CheckKvConsistency());
    ReleaseArrivals();
  }
  if (finished_ != static_cast<int64_t>(workload_.size()))
    return absl::InternalError(absl::StrFormat("engine: %d of %d requests finished", finished_,
                                               workload_.size()));
  DS_RETURN_IF_ERROR(scheduler_.CheckKvConsistency());
  if (scheduler_.kv().num_used() != 0)
    return absl::InternalError(absl::StrFormat("engine: %d KV blocks still held after the run",
                                               scheduler_.kv().num_used()));
  return absl::OkStatus();
}

void Engine::OnTokens(int32_t req, double time_s, int32_t tokens) {
  for (StepObserver* o : observers_) o->OnTokens(req, time_s, tokens);
}

void Engine::OnVerification(int32_t req, int32_t proposed, int32_t verified, int32_t accepted) {
  for (StepObserver* o : observers_) o->OnVerification(req, proposed, verified, accepted);
}

void Engine::OnFinished(int32_t req, double time_s) {
  ++finished_;
  --in_flight_;
  if (options_.concurrency > 0) free_slots_.push_back(time_s);
  for (StepObserver* o : observers_) o->OnFinished(req, time_s);
}

void Engine::OnOutcomes(double time_s, const RequestOutcome* outcomes, size_t n) {
  // The engine's own part of OnFinished first: observers never read the engine's counts.
  for (size_t i = 0; i < n; ++i) {
    if (!outcomes[i].finished) continue;
    ++finished_;
    --in_flight_;
    if (options_.concurrency > 0) free_slots_.push_back(time_s);
  }
  for (StepObserver* o : observers_) o->OnOutcomes(time_s, outcomes, n);
}

void Engine::OnPreempted(int32_t req, double time_s) {
  for (StepObserver* o : observers_) o->OnPreempted(req, time_s);
}

}  // namespace dspark::sim
