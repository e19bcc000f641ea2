// The speculative-decoding modes a run picks (--mode, --adaptive-mode) and their names.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

enum class SpecMode { kNone, kDSpark, kAdaptive };
absl::string_view SpecModeName(SpecMode mode);
absl::StatusOr<SpecMode> ParseSpecMode(absl::string_view name);
// vLLM's two adaptive verification managers: varlen compacts the batch, masked pads it.
enum class AdaptiveMode { kVarlen, kMasked };
absl::string_view AdaptiveModeName(AdaptiveMode mode);
absl::StatusOr<AdaptiveMode> ParseAdaptiveMode(absl::string_view name);

}  // namespace dspark::sim
