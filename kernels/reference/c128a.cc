#include "kernels/reference/c128a.h"

#include <algorithm>

namespace dspark::ref {

C128aTopk C128aTopkRef(const BatchSizes& sizes, const DeviceBatch& device, int32_t width, int32_t block_size,
                       int32_t ratio) {
  C128aTopk out;
  out.width = width;
  const int32_t N = std::max(sizes.num_tokens, 0), nd = std::clamp(sizes.num_decode_tokens, 0, N);
  out.decode_indices.assign(static_cast<size_t>(nd) * width, -1);
  out.decode_lens.assign(static_cast<size_t>(nd), 0);
  out.prefill_indices.assign(static_cast<size_t>(N - nd) * width, -1);
  const int32_t per_block = block_size / ratio;
  // Each token's request and position from the device boundaries.
  std::vector<int32_t> req(static_cast<size_t>(N), -1), pos(static_cast<size_t>(N), 0);
  for (int32_t r = 0; r < sizes.num_reqs; ++r) {
    const int32_t begin = device.query_start_loc[r], end = device.query_start_loc[r + 1];
    for (int32_t t = std::max(begin, 0); t < std::min(end, N); ++t) {
      req[t] = r;
      pos[t] = device.seq_lens[r] - (end - begin) + (t - begin);
    }
  }
  for (int32_t t = 0; t < N; ++t) {
    const int32_t count = std::min((pos[t] + 1) / ratio, width);
    if (t < nd) {
      for (int32_t c = 0; c < count; ++c) {
        // A token with entries belongs to a request (a padding token sees none).
        const int32_t block = std::max(device.block_table[int64_t{req[t]} * sizes.bt_stride + c / per_block], 0);
        out.decode_indices[static_cast<size_t>(t) * width + c] = block * per_block + c % per_block;
      }
      out.decode_lens[t] = device.slot_mapping[t] >= 0 ? count : 0;
    } else {
      for (int32_t c = 0; c < count; ++c) out.prefill_indices[static_cast<size_t>(t - nd) * width + c] = c;
    }
  }
  return out;
}

}  // namespace dspark::ref
