#include "kernels/reference/indexer_native.h"

#include <algorithm>

namespace dspark::ref {
namespace {

int32_t FloorDiv(int32_t a, int32_t b) {
  const int32_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

UniformDecodeSplit SplitUniformDecodes(const int32_t* qsl, int32_t num_reqs, int32_t num_tokens, int32_t threshold) {
  UniformDecodeSplit s;
  if (num_reqs <= 0) return s;
  int32_t max_q = 0;
  for (int32_t r = 0; r < num_reqs; ++r) max_q = std::max(max_q, qsl[r + 1] - qsl[r]);
  if (max_q <= threshold && threshold <= 1) return {num_reqs, num_tokens};
  const int32_t first = qsl[1] - qsl[0];
  if (first > threshold) return s;
  int32_t r = 0;
  bool all = true;
  for (int32_t i = 0; i < num_reqs; ++i) {
    const int32_t q = qsl[i + 1] - qsl[i];
    if (q != first && q != 0) all = false;
  }
  if (all) return {num_reqs, num_tokens};
  while (r < num_reqs && qsl[r + 1] - qsl[r] == first) ++r;
  return {r, qsl[r]};
}

IndexerNativeDecode IndexerNativeDecodeRef(const int32_t* qsl, const int32_t* seq_lens, int32_t num_reqs,
                                           int32_t num_tokens, int32_t next_n, int32_t ratio) {
  IndexerNativeDecode out;
  out.split = SplitUniformDecodes(qsl, num_reqs, num_tokens, next_n);
  const int32_t nd = out.split.num_decodes;
  if (nd == 0) return out;
  out.decode_lens.resize(static_cast<size_t>(nd));
  for (int32_t r = 0; r < nd; ++r) {
    out.decode_lens[r] = qsl[r + 1] - qsl[r];
    out.max_decode_len = std::max(out.max_decode_len, out.decode_lens[r]);
  }
  const int32_t L = out.max_decode_len;
  if (next_n > 1) {
    out.seq_lens.reserve(static_cast<size_t>(nd) * static_cast<size_t>(L));
    for (int32_t r = 0; r < nd; ++r)
      for (int32_t j = 0; j < L; ++j) out.seq_lens.push_back(FloorDiv(seq_lens[r] - L + 1 + j, ratio));
  } else {
    out.seq_lens.assign(static_cast<size_t>(std::max(out.split.num_decode_tokens, nd)), 0);
    for (int32_t r = 0; r < nd; ++r) out.seq_lens[r] = FloorDiv(seq_lens[r], ratio);
  }
  return out;
}

}  // namespace dspark::ref
