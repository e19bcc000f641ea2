#include "kernels/reference/ring_slots.h"

namespace dspark::ref {

std::vector<int64_t> RingSlots(const BatchSizes& sizes, const DeviceBatch& device, int32_t ring_capacity) {
  std::vector<int64_t> out(sizes.capacity, -1);
  const int32_t* qsl = device.query_start_loc;
  for (int32_t r = 0; r < sizes.num_reqs; ++r) {
    const int32_t first_block = device.block_table[int64_t{r} * sizes.bt_stride];
    if (first_block <= 0) continue;
    const int32_t qlen = qsl[r + 1] - qsl[r];
    const int32_t context = device.seq_lens[r] - qlen;
    for (int32_t i = 0; i < qlen; ++i)
      out[qsl[r] + i] = int64_t{first_block} * ring_capacity + (context + i) % ring_capacity;
  }
  return out;
}

}  // namespace dspark::ref
