#include "kernels/reference/swa.h"

#include <algorithm>

namespace dspark::ref {

SwaMetadata Swa(const BatchSizes& sizes, const DeviceBatch& device, int32_t window, int32_t block_size) {
  const int64_t rows = sizes.num_tokens;
  SwaMetadata out;
  // Padding tokens and every cell past a window's length keep these values.
  out.lens.assign(rows, 0);
  out.indices.assign(rows * window, -1);
  const int32_t* qsl = device.query_start_loc;
  for (int32_t r = 0; r < sizes.num_reqs; ++r) {
    const int32_t qlen = qsl[r + 1] - qsl[r];
    const int32_t* bt_row = device.block_table + int64_t{r} * sizes.bt_stride;
    for (int32_t t = qsl[r]; t < qsl[r + 1] && t < rows; ++t) {
      // An invalid token (slot_mapping -1, vLLM's is_valid_token false) keeps length 0 and -1s.
      if (device.slot_mapping != nullptr && device.slot_mapping[t] < 0) continue;
      const int32_t pos = device.seq_lens[r] - qlen + (t - qsl[r]);
      const int32_t first = std::max(pos - window + 1, 0);
      // An inconsistent request (seq_len < qlen) has pos < 0 and so an empty window.
      const int32_t len = std::max(pos - first + 1, 0);
      out.lens[t] = len;
      int32_t* row = &out.indices[t * window];
      for (int32_t p = first; p <= pos; ++p) {
        const int32_t block = bt_row[p / block_size];
        row[p - first] = block * block_size + p % block_size;
      }
    }
  }
  return out;
}

}  // namespace dspark::ref
