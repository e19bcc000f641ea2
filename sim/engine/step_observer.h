// Observers subscribe to a run and never steer it: they see each planned step (before its
// outcome is applied) and the request events, and report at the end. The engine calls them in
// the order they were added.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
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
  // Once per step, after it was planned and timed. A non-OK status stops the run with that
  // error (e.g. a metadata check that found a bug in an implementation that must be exact).
  virtual absl::Status OnStep(const StepPlan& plan) = 0;
  // Request events; `req` is the request's index in the workload.
  virtual void OnArrival(int32_t /*req*/, double /*time_s*/) {}
  virtual void OnTokens(int32_t /*req*/, double /*time_s*/, int32_t /*tokens*/) {}
  virtual void OnVerification(int32_t /*req*/, int32_t /*proposed*/, int32_t /*verified*/,
                              int32_t /*accepted*/) {}
  virtual void OnFinished(int32_t /*req*/, double /*time_s*/) {}
  virtual void OnPreempted(int32_t /*req*/, double /*time_s*/) {}
  // End of the run: fill this observer's section of summary.json. Non-OK fails the run.
  virtual absl::Status Finish(nlohmann::json* /*section*/) { return absl::OkStatus(); }
};

struct RunConfig;

// `run` builds extra observers through these factories (for example the metadata check of
// sim/metadata_check.cc). A factory returns nullptr when the run's options do not ask for its
// observer (e.g. --no-check).
using ObserverFactory =
    std::function<absl::StatusOr<std::unique_ptr<StepObserver>>(const RunConfig& config)>;

std::map<std::string, ObserverFactory>& ObserverFactories();

struct RegisterObserverFactory {
  RegisterObserverFactory(const std::string& name, ObserverFactory factory) {
    ObserverFactories()[name] = std::move(factory);
  }
};

}  // namespace dspark::sim
