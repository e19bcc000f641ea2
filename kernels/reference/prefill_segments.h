// CPU truth for prefill query segmentation (PR #57207), written from docs/design.md section 3, not
// from the kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/batch.h"

namespace dspark::ref {

struct PrefillSegments {
  std::vector<int32_t> seg_qsl;       // [max_segments + 1] absolute segment starts, then qsl[R]
  std::vector<int32_t> seg_seq_lens;  // [max_segments] per-segment sequence length, then 0
  int32_t count = 0;                  // real segments (may exceed max_segments: then truncated)
  int32_t max_query_len = 0;          // #57207's prefill_segment_max_query_len: the longest segment
};

// Prefill requests are [sizes.num_decodes, sizes.num_reqs). fp8: segments of at most
// `segment_len` tokens, none for an empty query; BF16: one segment per prefill request, also
// for an empty query.
PrefillSegments Segments(const BatchSizes& sizes, const DeviceBatch& device, bool fp8, int32_t segment_len,
                         int32_t max_segments);

}  // namespace dspark::ref
