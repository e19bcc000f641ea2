// CPU truth for the GPU executor's device compare (kernels/suite/gpu_compare.cuh), written from
// the semantics of a defined region (kernels/suite/regions.h) and not from the kernel: for every
// task, walk its [rows, cols] cells, read the reference cell (packed dense up to `dense_cells`,
// `tail` after it) and the implementation's cell (row-major with a row stride), and count the
// differing ones, those in columns 1.. of the padding rows apart from the others.
#pragma once

#include <cstdint>
#include <vector>

namespace dspark {

// One defined region of one implementation's buffers, as the device compare reads it. The two
// pointers are in whichever memory the reader runs in (device for the kernel, host here).
struct RegionCompareTask {
  const void* want = nullptr;  // the reference's first `dense_cells` cells, dense row-major
  const void* got = nullptr;   // the region's first cell in the implementation's buffer
  int64_t rows = 0, cols = 0;  // [cells] the defined extent
  int64_t got_stride = 0;      // [elements] between rows of `got`
  // >= 0: rows from here on are padding rows whose columns 1.. are counted apart (counts[1]).
  int64_t padding_rows_from = -1;
  int64_t dense_cells = 0;     // reference cells [dense_cells, rows * cols) all equal `tail`
  int64_t tail = 0;
  int32_t elem_bytes = 4;      // 4 (int32) or 8 (int64), both sides
  int32_t pad_ = 0;
};

namespace ref {

// [2 * tasks.size()]: for task t, counts[2t] the differing cells outside the padding columns,
// counts[2t + 1] those inside (columns 1.. of the rows from padding_rows_from).
std::vector<int64_t> CountRegionMismatches(const std::vector<RegionCompareTask>& tasks);

}  // namespace ref
}  // namespace dspark
