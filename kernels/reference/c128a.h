// CPU truth for DeepSeek-V4's C128A top-k metadata (the ratio-128 MLA group), written from the
// semantics of DeepseekV4SparseMLAMetadataBuilder._build_c128a_metadata (docs/states.md s.9),
// not from the kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/batch.h"

namespace dspark::ref {

struct C128aTopk {
  int32_t width = 0;                     // [entries] the active top-k width, the rows' length
  std::vector<int32_t> decode_indices;   // [N_d, width] global compressed slot ids, -1 past the count
  std::vector<int32_t> decode_lens;      // [N_d] the count, 0 for a token with no KV slot
  std::vector<int32_t> prefill_indices;  // [N - N_d, width] local indices 0, 1, ..., -1 past the count
};

// The DEVICE view of `device` for the step's N tokens, split at sizes.num_decode_tokens. A token
// at position p (its context before it plus itself: p + 1 tokens) sees (p + 1) // ratio
// compressed entries, at most `width`; graph padding tokens are at position 0. A decode token's
// entry c lives in block bt[r, c / E] (clamped to >= 0) at offset c % E, E = block_size / ratio.
C128aTopk C128aTopkRef(const BatchSizes& sizes, const DeviceBatch& device, int32_t width, int32_t block_size,
                       int32_t ratio = 128);

}  // namespace dspark::ref
