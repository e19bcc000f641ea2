#include "kernels/batch.h"

#include "absl/strings/str_format.h"
#include "kernels/common/hd.h"

namespace dspark {

int32_t CompressorRingCapacity(int32_t spec_k) { return MaxI(8, NextPow2(spec_k + 2)); }

absl::Status ValidateBatchSizes(const BatchSizes& s) {
  if (s.num_reqs < 0) return absl::InvalidArgumentError(absl::StrFormat("num_reqs=%d < 0", s.num_reqs));
  if (s.num_tokens < 0 || s.num_tokens > s.capacity)
    return absl::OutOfRangeError(
        absl::StrFormat("num_tokens=%d must be in [0, capacity=%d]", s.num_tokens, s.capacity));
  if (s.num_decodes < 0 || s.num_decodes > s.num_reqs)
    return absl::OutOfRangeError(
        absl::StrFormat("num_decodes=%d must be in [0, num_reqs=%d]", s.num_decodes, s.num_reqs));
  if (s.num_decode_tokens < 0 || s.num_decode_tokens > s.num_tokens)
    return absl::OutOfRangeError(absl::StrFormat(
        "num_decode_tokens=%d must be in [0, num_tokens=%d]", s.num_decode_tokens, s.num_tokens));
  if (s.bt_width < 0 || s.bt_stride < s.bt_width)
    return absl::InvalidArgumentError(absl::StrFormat(
        "block table width %d / stride %d: need 0 <= width <= stride", s.bt_width, s.bt_stride));
  return absl::OkStatus();
}

}  // namespace dspark
