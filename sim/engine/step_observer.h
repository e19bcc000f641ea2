// Observers subscribe to a run and never steer it: they see each planned step (after the
// executors ran it, before its outcome is applied) and the request events, and report at the
// end. The engine calls them in the order they were added.
#pragma once

#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "sim/model/request_outcome.h"
#include "sim/model/step_plan.h"

namespace dspark::sim {

class Engine;

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // Key of this observer's section in summary.json.
  virtual absl::string_view name() const = 0;
  // Once, when the run starts (before the first arrival): the engine, for observers that read
  // (never change) the models' state, such as the invariant check's KV accounting.
  virtual void OnStart(const Engine& /*engine*/) {}
  // Once per step, after it was planned, timed and executed. A non-OK status stops the run
  // with that error (e.g. an invariant check that found a violation).
  virtual absl::Status OnStep(const StepPlan& plan) = 0;
  // Request events; `req` is the request's index in the workload.
  virtual void OnArrival(int32_t /*req*/, double /*time_s*/) {}
  virtual void OnTokens(int32_t /*req*/, double /*time_s*/, int32_t /*tokens*/) {}
  virtual void OnVerification(int32_t /*req*/, int32_t /*proposed*/, int32_t /*verified*/,
                              int32_t /*accepted*/) {}
  virtual void OnFinished(int32_t /*req*/, double /*time_s*/) {}
  virtual void OnPreempted(int32_t /*req*/, double /*time_s*/) {}
  // A committed step's token, verification and finish events, in order (the engine calls this,
  // not the three above, for them); by default as the single events.
  virtual void OnOutcomes(double time_s, const RequestOutcome* outcomes, size_t n) {
    DeliverOutcomes(*this, time_s, outcomes, n);
  }
  // End of the run: fill this observer's section of summary.json. Non-OK fails the run.
  virtual absl::Status Finish(nlohmann::json* /*section*/) { return absl::OkStatus(); }
};

}  // namespace dspark::sim
