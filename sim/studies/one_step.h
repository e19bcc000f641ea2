// `dspark-sim step`: one hand-made batch (sim/studies/step_input.h) through every selected
// implementation in CPU emulation and through the reference, reported as JSON: every builder's
// outputs over the defined regions (kernels/suite/reference_fields.h names and shapes), the
// reference's, and every difference CompareSuite finds, classified (docs/design.md s.6).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/suite/impl_registry.h"
#include "nlohmann/json.hpp"
#include "sim/studies/step_input.h"

namespace dspark::sim {

inline constexpr int kStepResultSchemaVersion = 1;

struct OneStepResult {
  nlohmann::ordered_json report;  // the JSON document (workloads/STEP.md, "What step prints")
  int64_t bug_fields = 0;         // differing fields classified as bugs, over every impl
  int64_t failed_impls = 0;       // implementations whose run returned an error
};

// `argv` goes into the report's meta block. An error only for a step the suite cannot hold;
// an implementation that fails is reported in its entry (and counted in failed_impls).
absl::StatusOr<OneStepResult> RunOneStep(const StepInput& input, const std::vector<Impl>& impls,
                                         const std::vector<std::string>& argv);

// `report` as indented JSON with every array of numbers on one line (a block-table row, a
// field's values), so a person can read it and numpy/json can load it.
std::string StepReportText(const nlohmann::ordered_json& report);

}  // namespace dspark::sim
