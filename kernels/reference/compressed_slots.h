// CPU truth for the compressed (MLA ratio 1 / 2) slot mapping, written from docs/design.md
// section 3, not from the kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/batch.h"

namespace dspark::ref {

// [sizes.capacity] int64 compressed slot per token, -1 where none. Uses sizes.num_reqs,
// sizes.capacity, sizes.bt_stride and the device qsl / seq_lens / block_table / slot_mapping.
// `ratio` is 1 or 2; `block_size` [tokens per block] is the uncompressed block size.
// read_slot_mapping false: a token whose slot_mapping is -1 still gets its slot (the older
// signature of get_compressed_slot_mapping, without slot_mapping, that vLLM's indexer calls).
std::vector<int64_t> CompressedSlots(const BatchSizes& sizes, const DeviceBatch& device, int32_t ratio,
                                     int32_t block_size, bool read_slot_mapping = true);

}  // namespace dspark::ref
