// The speculative-decoding modes a run picks (--mode, --adaptive-mode) and their names.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

enum class SpecMode { kNone, kDSpark, kAdaptive };
absl::string_view SpecModeName(SpecMode mode);
absl::StatusOr<SpecMode> ParseSpecMode(absl::string_view name);
// How a run applies adaptive verification's allocation. varlen is what vLLM releases do
// (compact_batch, reallocate_drafts). masked is a what-if that no vLLM release has (0.28.0-
// 0.30.0 refuse adaptive verification unless every attention backend supports CUDA graphs
// ALWAYS, 0.31.0 and later through get_varlen_cudagraph_unsupported_backend): the layout
// stays as scheduled and the pruned drafts become padding inside it.
enum class AdaptiveMode { kVarlen, kMasked };
absl::string_view AdaptiveModeName(AdaptiveMode mode);
absl::StatusOr<AdaptiveMode> ParseAdaptiveMode(absl::string_view name);
// What a run's output says of the mode: "vLLM" for varlen, the what-if label for masked.
absl::string_view AdaptiveModeLabel(AdaptiveMode mode);

// The vLLM release whose adaptive verification a run follows (--av-release), by its minor
// version: 28 to 34 (0.28.0-0.34.0), default 34. The releases differ only in the device
// allocation's tie order: 0.34.0's Triton kernel gives ties to the lower (request, step);
// 0.28.0-0.33.0 take torch.topk's, which is unspecified (the simulator then gives ties as
// 0.34.0 does, and says so: AvTieOrder).
inline constexpr int32_t kDefaultAvRelease = 34;
std::string AvReleaseName(int32_t minor);  // "0.34.0"
absl::StatusOr<int32_t> ParseAvRelease(absl::string_view name);  // "0.34.0" or "0.34"
absl::string_view AvTieOrder(int32_t minor);

}  // namespace dspark::sim
