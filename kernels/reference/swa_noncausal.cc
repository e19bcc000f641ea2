#include "kernels/reference/swa_noncausal.h"

#include <algorithm>

namespace dspark::ref {

int32_t DsparkSwaIndexWidth(int32_t window, int32_t spec_k) {
  const int32_t width = std::max(window, 0) + std::max(spec_k, 0);
  return (width + 63) / 64 * 64;
}

SwaNonCausalRows SwaNonCausal(const BatchSizes& sizes, const DeviceBatch& device, int32_t window, int32_t width,
                              int32_t block_size) {
  const int64_t rows = std::max(sizes.num_decode_tokens, 0);
  SwaNonCausalRows out;
  out.lens.assign(rows, 0);
  out.indices.assign(rows * width, -1);
  const int32_t* qsl = device.query_start_loc;
  for (int32_t r = 0; r < sizes.num_reqs; ++r) {
    const int32_t qlen = qsl[r + 1] - qsl[r];
    const int32_t seq_len = device.seq_lens[r];
    const int32_t first = std::max(seq_len - qlen - window, 0);
    const int32_t* bt_row = device.block_table + int64_t{r} * sizes.bt_stride;
    // Every valid token of the request sees the same window: its row is written once, then copied.
    const int32_t* made = nullptr;
    for (int32_t t = qsl[r]; t < qsl[r + 1] && t < rows; ++t) {
      if (device.slot_mapping[t] < 0) continue;  // is_valid_token false: length 0, row of -1
      out.lens[t] = seq_len - first;
      int32_t* row = &out.indices[int64_t{t} * width];
      if (made != nullptr) {
        std::copy(made, made + width, row);
        continue;
      }
      for (int32_t p = first; p < seq_len && p - first < width; ++p)
        row[p - first] = bt_row[p / block_size] * block_size + p % block_size;
      made = row;
    }
  }
  return out;
}

}  // namespace dspark::ref
