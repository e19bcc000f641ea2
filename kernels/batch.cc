#include "kernels/batch.h"

#include <algorithm>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/hd.h"

namespace dspark {

int32_t CompressorRingCapacity(int32_t spec_k) { return MaxI(8, NextPow2(spec_k + 2)); }

std::string_view ModelName(ModelKind m) { return m == ModelKind::kV4 ? "DeepSeek-V4" : "DeepSeek-V4.1"; }
std::string_view ModelFlag(ModelKind m) { return m == ModelKind::kV4 ? "v4" : "v4.1"; }

absl::StatusOr<ModelKind> ParseModel(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  if (lower == "v4" || lower == "deepseek-v4") return ModelKind::kV4;
  if (lower == "v4.1" || lower == "deepseek-v4.1") return ModelKind::kV41;
  return absl::InvalidArgumentError(
      absl::StrCat("model '", std::string(name), "': expected v4 (DeepSeek-V4) or v4.1 (DeepSeek-V4.1)"));
}

ModelConsts ModelConstsFor(ModelKind m) {
  ModelConsts c;
  c.model = m;
  if (m == ModelKind::kV4) {
    // One block table serves every group here: V4's 256-token blocks for SWA too.
    c.mla_block_size = 256;
    c.swa_block_size = 256;
  }
  return c;
}

int32_t MlaRatio(const ModelConsts& c, int k) {
  if (c.model == ModelKind::kV4) return k == 0 ? 4 : 128;
  return k + 1;
}

int32_t IndexerRatio(const ModelConsts& c, int k) {
  if (c.model == ModelKind::kV4) return k == 1 ? 4 : 0;
  return k + 1;
}

int32_t C128aWidth(const ModelConsts& c, int64_t max_seq_len) {
  const int64_t compressed = std::max<int64_t>(max_seq_len / 128, 1);
  int64_t p = 1;
  while (p < compressed) p *= 2;
  return static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(p, 128), c.c128a_max_width));
}

std::vector<int32_t> GraphCaptureSizes(int32_t max_num_seqs, int32_t max_num_batched_tokens, int32_t spec_k) {
  const int32_t q = 1 + spec_k;
  const int32_t max_size = static_cast<int32_t>(std::min<int64_t>(int64_t{max_num_seqs} * q * 2, 512));
  std::vector<int32_t> base = {1, 2, 4};
  for (int32_t s = 8; s < 256; s += 8) base.push_back(s);
  for (int32_t s = 256; s <= max_size; s += 16) base.push_back(s);
  std::vector<int32_t> sizes;
  for (int32_t s : base) {
    if (s > max_size) continue;
    const int32_t rounded = CeilDiv(s, q) * q;
    if (rounded <= max_num_batched_tokens) sizes.push_back(rounded);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

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
