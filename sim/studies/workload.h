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

// What a run's report says of its workload (summary.json's "workload" holds them too).
struct WorkloadFacts {
  std::string name;                // the preset's name, or the trace's path
  std::string arrivals;            // how the requests arrive, in words
  std::vector<std::string> notes;  // what the simulator leaves out of the trace
  double arrival_span_s = 0;       // [s] first to last arrival
};

struct Workload {
  std::vector<RequestSpec> requests;
  WorkloadFacts facts;
  std::string acceptance_preset;  // implied by the workload (or the option)
  int32_t concurrency = 0;        // effective client limit, 0 = none
  nlohmann::json info;            // what summary.json reports about the workload
};

absl::StatusOr<Workload> BuildWorkload(const RunConfig& config);

}  // namespace dspark::sim
