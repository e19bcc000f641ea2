// CPU truth for the compressed (MLA ratio 1 / 2) slot mapping, written from DESIGN.md
// section 3, not from the kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/batch.h"

namespace dspark::ref {

// [sizes.capacity] int64 compressed slot per token, -1 where none. Uses sizes.num_reqs,
// sizes.capacity, sizes.bt_stride and the device qsl / seq_lens / block_table / slot_mapping.
// `ratio` is 1 or 2; `block_size` [tokens per block] is the uncompressed block size.
std::vector<int64_t> CompressedSlots(const BatchSizes& sizes, const DeviceBatch& device, int32_t ratio,
                                     int32_t block_size);

}  // namespace dspark::ref
