// The CPU check's row-matrix buffers grow with the steps instead of being allocated at
// [token_capacity, row width] (memory follows the step, not the capacity):
//   - the indexer bt_out: only rows [0, N_d) are ever written (IndexerDecodeKernel, the old
//     chain, the fused suite) or compared;
//   - swa_indices: only rows [0, N) (SwaKernel's rows token_offset + [0, num_tokens) with
//     token_offset + num_tokens <= N, the fused suite's token rows t < N);
//   - swa_indices_noncausal: only rows [0, N_d) (the draft step's decode launch, num_tokens =
//     N_d; the fused suite's rows t < N_d).
// So a buffer of the rows the steps so far needed, each new row poisoned when it is added, holds
// exactly what the full buffer would hold there. At --max-model-len 131072 the full bt_out
// buffers would be 2 x 128 MB per implementation; at the default workload's capacity (8,192) the
// SWA buffers are 10 MB per implementation, most of it never touched by a step (N_d <= 84 there),
// and first-touching them was a third of that run's CPU time (page faults).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/suite/suite.h"

namespace dspark {

// The rows a step writes of each growing buffer.
struct StepRows {
  int64_t tokens = 0;         // N: swa_indices
  int64_t decode_tokens = 0;  // N_d: bt_out, swa_indices_noncausal
};

inline StepRows RowsOf(const BatchSizes& z) { return StepRows{z.num_tokens, z.num_decode_tokens}; }

namespace bt_rows_internal {
// Grows a non-empty `v` to at least rows * width cells, new cells `poison`.
inline void Grow(std::vector<int32_t>& v, int64_t rows, int32_t width, int32_t poison) {
  const size_t want = static_cast<size_t>(std::max<int64_t>(rows, 0)) * static_cast<size_t>(std::max(width, 0));
  if (!v.empty() && v.size() < want) v.resize(want, poison);
}
}  // namespace bt_rows_internal

// SuiteImage::Filled(l, poison) with one row in each bt_out, swa_indices and
// swa_indices_noncausal.
inline SuiteImage FilledWithOneBtRow(const SuiteLayout& l, int32_t poison) {
  SuiteLayout no_rows = l;  // the row matrices' widths are read by Filled for them alone
  no_rows.bt_out_stride = 0;
  no_rows.window = 0;
  no_rows.noncausal_width = 0;
  no_rows.c128a_stride = 0;
  SuiteImage im = SuiteImage::Filled(no_rows, poison);
  if (l.c128a_stride > 0) {  // DeepSeek-V4's C128A rows, grown like the others
    im.c128a_decode.assign(static_cast<size_t>(l.c128a_stride), poison);
    im.c128a_decode_lens.assign(static_cast<size_t>(std::max(l.token_capacity, 1)), poison);
    im.c128a_prefill.assign(static_cast<size_t>(l.c128a_stride), poison);
  }
  for (SuiteImage::Indexer& x : im.indexer) x.bt_out.assign(static_cast<size_t>(std::max(l.bt_out_stride, 1)), poison);
  im.swa_indices.assign(static_cast<size_t>(std::max(l.window, 1)), poison);
  im.swa_indices_noncausal.assign(static_cast<size_t>(std::max(l.noncausal_width, 1)), poison);
  return im;
}

// Grows every non-empty row buffer of `im` to the rows of `rows` (bt_out: `stride` per row;
// swa_indices: l.window; swa_indices_noncausal: l.noncausal_width), new cells `poison` (the cells
// it held stay; pointers into it move when it grows).
inline void GrowRows(SuiteImage* im, const StepRows& rows, int32_t stride, const SuiteLayout& l, int32_t poison) {
  for (SuiteImage::Indexer& x : im->indexer) bt_rows_internal::Grow(x.bt_out, rows.decode_tokens, stride, poison);
  bt_rows_internal::Grow(im->swa_indices, rows.tokens, l.window, poison);
  bt_rows_internal::Grow(im->swa_indices_noncausal, rows.decode_tokens, l.noncausal_width, poison);
  bt_rows_internal::Grow(im->c128a_decode, rows.decode_tokens, l.c128a_stride, poison);
  bt_rows_internal::Grow(im->c128a_prefill, rows.tokens, l.c128a_stride, poison);
}

// The buffers of `im` at the full layout (the rows no step wrote: poison), what
// SuiteImage::Filled would have held: for CpuSuite::Image, whose readers index the layout.
inline void GrowToLayout(SuiteImage* im, const SuiteLayout& l, int32_t poison) {
  GrowRows(im, StepRows{l.token_capacity, l.token_capacity}, l.bt_out_stride, l, poison);
}

}  // namespace dspark
