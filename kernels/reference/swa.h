// CPU truth for the SWA builder, written from docs/design.md section 3, not from the kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/batch.h"

namespace dspark::ref {

struct SwaMetadata {
  std::vector<int32_t> lens;     // [num_tokens] window length per token, 0 for padding
  std::vector<int32_t> indices;  // [num_tokens, window] slot per window cell, -1 past the length
};

// Uses sizes.num_reqs, sizes.num_tokens, sizes.bt_stride and the device qsl / seq_lens /
// block_table / slot_mapping (a token whose slot is -1 is invalid: length 0, a row of -1; a null
// slot_mapping makes every token valid). `window` and `block_size` in tokens.
SwaMetadata Swa(const BatchSizes& sizes, const DeviceBatch& device, int32_t window, int32_t block_size);

}  // namespace dspark::ref
