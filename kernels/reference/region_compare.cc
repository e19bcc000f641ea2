#include "kernels/reference/region_compare.h"

#include <cstddef>

namespace dspark::ref {
namespace {

int64_t Cell(const void* base, int32_t elem_bytes, int64_t i) {
  return elem_bytes == 8 ? static_cast<const int64_t*>(base)[i] : static_cast<const int32_t*>(base)[i];
}

}  // namespace

std::vector<int64_t> CountRegionMismatches(const std::vector<RegionCompareTask>& tasks) {
  std::vector<int64_t> counts(2 * tasks.size(), 0);
  for (size_t t = 0; t < tasks.size(); ++t) {
    const RegionCompareTask& k = tasks[t];
    for (int64_t row = 0; row < k.rows; ++row)
      for (int64_t col = 0; col < k.cols; ++col) {
        const int64_t cell = row * k.cols + col;
        const int64_t want = cell < k.dense_cells ? Cell(k.want, k.elem_bytes, cell) : k.tail;
        const int64_t got = Cell(k.got, k.elem_bytes, row * k.got_stride + col);
        if (want == got) continue;
        const bool padding = k.padding_rows_from >= 0 && row >= k.padding_rows_from && col > 0;
        ++counts[2 * t + (padding ? 1 : 0)];
      }
  }
  return counts;
}

}  // namespace dspark::ref
