#include "kernels/reference/compressed_slots.h"

#include <algorithm>

namespace dspark::ref {

std::vector<int64_t> CompressedSlots(const BatchSizes& sizes, const DeviceBatch& device, int32_t ratio,
                                     int32_t block_size, bool read_slot_mapping) {
  std::vector<int64_t> out(sizes.capacity, -1);
  const int32_t entries_per_block = block_size / ratio;
  const int32_t* qsl = device.query_start_loc;
  for (int32_t b = 0; b < sizes.num_reqs; ++b) {
    const int32_t qlen = qsl[b + 1] - qsl[b];
    for (int32_t i = 0; i < qlen; ++i) {
      const int32_t t = qsl[b] + i;
      const int32_t pos = device.seq_lens[b] - qlen + i;
      if ((pos + 1) % ratio != 0) continue;
      if (read_slot_mapping && device.slot_mapping[t] == -1) continue;
      const int32_t cp = pos / ratio;
      const int32_t block = std::max(device.block_table[int64_t{b} * sizes.bt_stride + cp / entries_per_block], 0);
      out[t] = int64_t{block} * entries_per_block + cp % entries_per_block;
    }
  }
  return out;
}

}  // namespace dspark::ref
