// What an Engine is built from, for tests that run one directly: the scheduler's config, the
// requests, the acceptance model of K drafts and the default time model. A test fills in the
// config and the requests.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/model/acceptance.h"
#include "sim/model/scheduler.h"
#include "sim/model/time_model.h"
#include "sim/workload/trace.h"

namespace dspark::sim::testing_util {

struct EngineInputs {
  explicit EngineInputs(int32_t spec_k) : acceptance(*AcceptancePreset("default", spec_k), spec_k) {
    config.spec_k = spec_k;
  }
  SchedulerConfig config;
  std::vector<RequestSpec> requests;
  AcceptanceModel acceptance;
  TimeModel time_model{DefaultTimeModelParams()};
};

}  // namespace dspark::sim::testing_util
