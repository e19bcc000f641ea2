// The CPU check's indexer bt_out buffers grow with the steps instead of being allocated at
// [token_capacity, bt_out_stride] (issue 14: memory follows the step, not the capacity). Only
// rows [0, N_d) of bt_out are ever written (IndexerDecodeKernel, the old chain, the fused suite)
// or compared, so a buffer of the rows the steps so far needed, each new row poisoned when it is
// added, holds exactly what the full buffer would hold there. At --max-model-len 131072 the full
// buffers would be 2 x 128 MB per implementation.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/suite/suite.h"

namespace dspark {

// SuiteImage::Filled(l, poison) with one row in each bt_out.
inline SuiteImage FilledWithOneBtRow(const SuiteLayout& l, int32_t poison) {
  SuiteLayout no_rows = l;
  no_rows.bt_out_stride = 0;
  SuiteImage im = SuiteImage::Filled(no_rows, poison);
  for (SuiteImage::Indexer& x : im.indexer) x.bt_out.assign(static_cast<size_t>(std::max(l.bt_out_stride, 1)), poison);
  return im;
}

// Grows every non-empty bt_out of `im` to at least `rows` rows of `stride`, new cells `poison`
// (the cells it held stay; pointers into it move when it grows).
inline void GrowBtRows(SuiteImage* im, int64_t rows, int32_t stride, int32_t poison) {
  const size_t want = static_cast<size_t>(std::max<int64_t>(rows, 0)) * static_cast<size_t>(std::max(stride, 0));
  for (SuiteImage::Indexer& x : im->indexer)
    if (!x.bt_out.empty() && x.bt_out.size() < want) x.bt_out.resize(want, poison);
}

}  // namespace dspark
