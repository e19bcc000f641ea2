// Turns a run's options into the request list it replays: a parsed trace or a generated
// preset, optionally re-timed, sorted by (arrival, id). Generated requests are cut to
// max_model_len; a trace row beyond it is a bad row (sim/workload/trace.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sim/studies/config.h"
#include "sim/workload/trace.h"

namespace dspark::sim {

struct Workload {
  std::vector<RequestSpec> requests;
  std::string acceptance_preset;  // implied by the workload (or the option)
  int32_t concurrency = 0;        // effective client limit, 0 = none
  nlohmann::json info;            // what summary.json reports about the workload
};

absl::StatusOr<Workload> BuildWorkload(const RunConfig& config);

}  // namespace dspark::sim
