#include "kernels/reference/swa_prefill.h"

#include <algorithm>

namespace dspark::ref {

std::vector<int32_t> SwaPrefillGatherLens(const BatchSizes& sizes, const DeviceBatch& device, int32_t window) {
  std::vector<int32_t> out;
  for (int32_t r = sizes.num_decodes; r < sizes.num_reqs; ++r) {
    const int32_t q = device.query_start_loc[r + 1] - device.query_start_loc[r];
    const int32_t prefix = device.seq_lens[r] - q;
    out.push_back(q + std::min(prefix, window - 1));
  }
  return out;
}

}  // namespace dspark::ref
