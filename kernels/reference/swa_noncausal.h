// CPU truth for the DSpark draft step's non-causal SWA rows, written from the semantics of vLLM's
// _compute_dspark_noncausal_swa_indices_kernel (sparse_swa.py, DeepseekSparseSWAMetadataBuilder
// .build when CommonAttentionMetadata.causal is false; read_file id 61399074654), not from the
// kernel here. docs/design.md s.3 "DSpark draft rows are non-causal".
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/batch.h"

namespace dspark::ref {

// The padded row width, vLLM's get_dspark_swa_index_width (compressor_utils.py):
// ceil((window + K) / 64) * 64, 192 for (128, 5).
int32_t DsparkSwaIndexWidth(int32_t window, int32_t spec_k);

struct SwaNonCausalRows {
  std::vector<int32_t> lens;     // [num_decode_tokens] window length per decode token, 0 if invalid
  std::vector<int32_t> indices;  // [num_decode_tokens, width] slot per cell, -1 past the length
};

// Decode rows t < sizes.num_decode_tokens. A token whose slot_mapping is -1 gets length 0 and a
// row of -1. Otherwise, for its request r (device qsl) with prefix = seq_len - qlen, every token
// of the request sees positions [max(prefix - window, 0), seq_len): the window before the block
// and the whole block, future query tokens included; the length is that span's, the row holds
// its first `width` slots (block_table[r, p / bs] * bs + p % bs).
SwaNonCausalRows SwaNonCausal(const BatchSizes& sizes, const DeviceBatch& device, int32_t window, int32_t width,
                              int32_t block_size);

}  // namespace dspark::ref
