#include "sim/model/spec_mode.h"

#include "absl/strings/str_cat.h"
#include "sim/workload/input_file.h"

namespace dspark::sim {

absl::string_view SpecModeName(SpecMode mode) {
  switch (mode) {
    case SpecMode::kNone: return "none";
    case SpecMode::kDSpark: return "dspark";
    case SpecMode::kAdaptive: return "adaptive";
  }
  return "?";
}

absl::StatusOr<SpecMode> ParseSpecMode(absl::string_view name) {
  for (SpecMode m : {SpecMode::kNone, SpecMode::kDSpark, SpecMode::kAdaptive})
    if (name == SpecModeName(m)) return m;
  return absl::InvalidArgumentError(
      absl::StrCat("--mode: expected none, dspark or adaptive, got '", Abbreviate(name), "'"));
}

absl::string_view AdaptiveModeName(AdaptiveMode mode) {
  return mode == AdaptiveMode::kMasked ? "masked" : "varlen";
}

absl::StatusOr<AdaptiveMode> ParseAdaptiveMode(absl::string_view name) {
  for (AdaptiveMode m : {AdaptiveMode::kVarlen, AdaptiveMode::kMasked})
    if (name == AdaptiveModeName(m)) return m;
  return absl::InvalidArgumentError(
      absl::StrCat("--adaptive-mode: expected varlen or masked, got '", name, "'"));
}

}  // namespace dspark::sim
