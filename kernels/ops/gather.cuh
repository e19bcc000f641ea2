// The gather ops of kernels/ops.cuh: index_select (elementwise, and PyTorch's small-index
// kernel) and advanced indexing of a 2-D table. An index out of range yields 0 where PyTorch would
// device-assert: the exact comparison reports the value instead.
#pragma once

#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

#include "kernels/ops/broadcast.cuh"
#include "kernels/ops/elementwise.cuh"

namespace dspark::ops {

// src.index_select(0, index) for a 1-D src. An index outside [0, src_len) yields 0: PyTorch
// would raise a device-side assert and kill the context; the simulator keeps running and the
// exact comparison against the reference reports the wrong value instead.
struct GatherKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* src;    // [src_len]
  int32_t src_len;       // [elements]
  const int32_t* index;  // [n]
  int32_t* out;          // [n]
  int32_t n;             // [elements]

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const {
    const int32_t k = index[i];
    out[i] = (k >= 0 && k < src_len) ? src[k] : 0;
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// src.index_select(0, index) for a 2-D row-strided src: dst row i = src row index[i], first
// `cols` columns. One thread per output element, as PyTorch's index_select kernel. An index
// outside [0, src_rows) yields a zero row (see GatherKernel).
struct GatherRowsKernel {
  DS_ELEMENTWISE_2D_KERNEL
  const int32_t* src;    // [src_rows, src_stride]
  int32_t src_rows;      // [rows]
  int32_t src_stride;    // [int32]
  const int32_t* index;  // [rows]
  int32_t* dst;          // [rows, dst_stride]
  int32_t dst_stride;    // [int32]
  int32_t rows;          // [rows] of the output
  int32_t cols;          // [int32] columns copied per row

  // dst[row, col] from the selected source row (0 for an index out of range).
  DS_HD void Element2(int32_t /*i*/, int32_t row, int32_t col) const {
    const int32_t k = index[row];
    dst[row * dst_stride + col] = (k >= 0 && k < src_rows) ? src[k * src_stride + col] : 0;
  }
  // CPU path: row `row`'s first m columns, one loop (Element2's stores, in order).
  void CpuRow(int32_t row, int32_t m) const {
    const int32_t k = index[row];
    int32_t* d = dst + static_cast<int64_t>(row) * dst_stride;
    if (k >= 0 && k < src_rows) {
      const int32_t* s = src + static_cast<int64_t>(k) * src_stride;
      for (int32_t col = 0; col < m; ++col) d[col] = s[col];
    } else {
      for (int32_t col = 0; col < m; ++col) d[col] = 0;
    }
  }
  void CpuElements(int64_t n) const {
    for (int32_t row = 0; n > 0; ++row, n -= cols) CpuRow(row, static_cast<int32_t>(n < cols ? n : cols));
  }
};

// src.index_select(0, index) with at most kMaxIndices indices, as PyTorch launches it then
// (indexSelectSmallIndex; index_select_out_cuda_impl picks it for numIndices <= 16): the grid
// spans one selected slice, min(ceil(cols / 128), 8 x SMs) blocks of min(cols, 128) threads, and
// every thread walks all the indices in order, loading each index and then its slice elements.
// With cold caches that is a chain of dependent loads per index, which is what this op costs in
// vLLM's chains. The output equals GatherKernel's (cols = 1) or GatherRowsKernel's
// (tests/kernels/test_ops_index_select.cc). Also 1-D: cols = 1, strides 1.
struct IndexSelectSmallKernel {
  static constexpr int32_t kMaxIndices = 16;    // PyTorch's small-index bound
  static constexpr int32_t kSliceThreads = 128;  // PyTorch's block bound
  static constexpr int32_t kMaxBlocks = 8 * 132;  // 8 x an H200's SMs
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  GatherRowsKernel sel;  // what is selected (sel.rows at most kMaxIndices); only the launch differs

  LaunchShape Shape() const {
    if (sel.rows <= 0 || sel.cols <= 0) return {0, 1};
    return {MinI(CeilDiv(sel.cols, kSliceThreads), kMaxBlocks), MinI(sel.cols, kSliceThreads)};
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    for (int32_t i = 0; i < sel.rows; ++i)
      for (int32_t col = c.block * c.block_dim + c.thread; col < sel.cols; col += c.grid_dim * c.block_dim)
        sel.Element2(0, i, col);
  }
  // CPU path: the threads' grid-stride loops cover every column of every row, and no two
  // threads store the same cell, so row by row gives the same buffer.
  void CpuRun(LaunchShape shape) const {
    if (shape.grid <= 0 || shape.block <= 0 || sel.cols <= 0) return;
    for (int32_t i = 0; i < sel.rows; ++i) sel.CpuRow(i, sel.cols);
  }
};

// table[row_index[:, None], col_index] (advanced indexing) on a row-strided 2-D int32 table: out[i, j]
// = table[row_index[i], col_index(i, j)]. An index outside [0, table_rows) x [0, table_cols) yields
// 0 (see GatherKernel: torch would device-assert; the exact comparison reports the value instead).
struct GatherIndex2DKernel {
  DS_ELEMENTWISE_2D_KERNEL
  const int32_t* table;      // [table_rows, table_stride]
  int32_t table_rows;        // [rows]
  int32_t table_cols;        // [int32] columns that may be read
  int32_t table_stride;      // [int32]
  const int32_t* row_index;  // [rows] table row per output row
  View2D col_index;          // [rows, cols] table column per output element
  int32_t* out;              // [rows, cols]
  int32_t rows;              // [elements]
  int32_t cols;              // [elements]

  DS_HD void Element2(int32_t i, int32_t row, int32_t col) const {
    const int32_t r = row_index[row], k = col_index.At(row, col);
    out[i] = (r >= 0 && r < table_rows && k >= 0 && k < table_cols)
                 ? table[static_cast<int64_t>(r) * table_stride + k]
                 : 0;
  }
};

}  // namespace dspark::ops
