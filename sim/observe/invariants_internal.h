// What the invariant checker's files share (sim/observe/invariants*.cc).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/model/step_plan.h"

namespace dspark::sim::invariants_internal {

// Internal "invariant violated at step S: ...": a violation is the simulator's bug, not the input's.
template <typename... Args>
absl::Status Violation(int64_t step, const absl::FormatSpec<Args...>& format, const Args&... args) {
  return absl::InternalError(
      absl::StrCat("invariant violated at step ", step, ": ", absl::StrFormat(format, args...)));
}

inline bool IsDraftCase(StepCase c) { return c == StepCase::kSpecDraft || c == StepCase::kAdaptiveDraft; }

}  // namespace dspark::sim::invariants_internal
