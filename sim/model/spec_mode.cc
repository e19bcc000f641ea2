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

absl::string_view AdaptiveModeLabel(AdaptiveMode mode) {
  return mode == AdaptiveMode::kMasked
             ? "masked: a what-if, no vLLM release has it (the pruned drafts stay as padding)"
             : "varlen: vLLM's (compact_batch + reallocate_drafts)";
}

std::string AvReleaseName(int32_t minor) { return absl::StrCat("0.", minor, ".0"); }

absl::StatusOr<int32_t> ParseAvRelease(absl::string_view name) {
  for (int32_t minor = 28; minor <= 34; ++minor)
    if (name == AvReleaseName(minor) || name == absl::StrCat("0.", minor)) return minor;
  return absl::InvalidArgumentError(absl::StrCat(
      "--av-release: expected a vLLM release with adaptive verification, 0.28.0 to 0.34.0, got '",
      Abbreviate(name), "'"));
}

absl::string_view AvTieOrder(int32_t minor) {
  return minor >= 34 ? "vLLM 0.34.0's: ties to the lower (request, step)"
                     : "vLLM's torch.topk order, which is unspecified (simulated: ties to the lower "
                       "(request, step), as 0.34.0 gives them)";
}

}  // namespace dspark::sim
