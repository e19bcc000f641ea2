#include "kernels/reference/prefill_segments.h"

#include <algorithm>

namespace dspark::ref {

PrefillSegments Segments(const BatchSizes& sizes, const DeviceBatch& device, bool fp8, int32_t segment_len,
                         int32_t max_segments) {
  const int32_t* qsl = device.query_start_loc;
  // #57207: starts count from the first prefill token, and the last entry is the prefill token
  // count (vLLM's test asserts cu[-1] == num_prefill_tokens).
  const int32_t base = qsl[sizes.num_decodes];
  std::vector<int32_t> starts, lens;
  for (int32_t r = sizes.num_decodes; r < sizes.num_reqs; ++r) {
    const int32_t qlen = qsl[r + 1] - qsl[r];
    const int32_t context = device.seq_lens[r] - qlen;
    if (!fp8) {
      starts.push_back(qsl[r] - base);
      lens.push_back(device.seq_lens[r]);
      continue;
    }
    for (int32_t begin = 0; begin < qlen; begin += segment_len) {
      const int32_t end = std::min(begin + segment_len, qlen);
      starts.push_back(qsl[r] - base + begin);
      lens.push_back(context + end);
    }
  }
  PrefillSegments out;
  out.count = static_cast<int32_t>(starts.size());
  // The longest segment, from consecutive starts (the last ends at the prefill token count).
  for (size_t k = 0; k < starts.size(); ++k) {
    const int32_t end = k + 1 < starts.size() ? starts[k + 1] : qsl[sizes.num_reqs] - base;
    out.max_query_len = std::max(out.max_query_len, end - starts[k]);
  }
  out.seg_qsl.assign(max_segments + 1, qsl[sizes.num_reqs] - base);
  out.seg_seq_lens.assign(max_segments, 0);
  for (int32_t k = 0; k < out.count && k < max_segments; ++k) {
    out.seg_qsl[k] = starts[k];
    out.seg_seq_lens[k] = lens[k];
  }
  return out;
}

}  // namespace dspark::ref
