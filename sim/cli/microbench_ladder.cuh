// microbench's latency ladder (sim/cli/microbench_rows.cu, group "ladder"): probe kernels with
// nothing but a chain of dependent memory accesses, timed by the method of every other row
// (graph replay behind the L2 flush, events, the empty-kernel floor beside it). They bound from
// below what any kernel with that chain can cost, whatever else it does:
//   depth 0  the parameters, then a store                     (out[i] = i)
//   depth 1  the parameters, one load, a store                (out[i] = qsl[j])
//   depth 2  the parameters, a load, a load it selects, store (out[i] = bt[min(qsl[j], R-1)][col])
//   depth 2, guessed: the second load's row guessed as j (exact for batch-16 decode, where
//            qsl[j] = j) and issued beside the first; loaded again where the guess misses.
// fused-suite's SWA cells and indexer rows, and the fused indexer's rows, are the depth-2 chain:
// the boundaries (and seq_lens), then the block-table cell the token's request selects.
// Thread i of the grid takes j = i % (R + 1) and col = i % W, so every block runs the chain.
#pragma once

#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

namespace dspark::microbench_internal {

struct LadderParams {
  const int32_t* qsl;  // [R + 1] boundaries
  const int32_t* bt;   // [R, stride] block table
  int32_t* out;        // [grid * block] one cell per thread
  int32_t num_reqs;    // R
  int32_t width;       // W [columns] read
  int32_t stride;      // [int32] row stride of bt
  int32_t depth;       // 0, 1, 2
  int32_t guess;       // 1: depth 2 with the row guessed beside the first load
};

// The value thread i stores, from the host copies (the check).
inline int32_t LadderExpected(const LadderParams& p, const int32_t* qsl, const int32_t* bt, int64_t i) {
  const int32_t j = static_cast<int32_t>(i % (p.num_reqs + 1));
  const int32_t col = static_cast<int32_t>(i % p.width);
  if (p.depth == 0) return static_cast<int32_t>(i);
  if (p.depth == 1) return qsl[j];
  const int32_t row = qsl[j] < p.num_reqs - 1 ? qsl[j] : p.num_reqs - 1;
  return bt[static_cast<int64_t>(row) * p.stride + col];
}

struct LadderKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  LadderParams p;

  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int64_t i = static_cast<int64_t>(c.block) * c.block_dim + c.thread;
    const int32_t j = static_cast<int32_t>(i % (p.num_reqs + 1));
    const int32_t col = static_cast<int32_t>(i % p.width);
    if (p.depth == 0) {
      p.out[i] = static_cast<int32_t>(i);
      return;
    }
    if (p.depth == 1) {
      p.out[i] = p.qsl[j];
      return;
    }
    const int32_t last = p.num_reqs - 1;
    const int32_t g = j < last ? j : last;
    // Issued before the first load's value is known: the guessed row's cell.
    const int32_t guessed = p.guess ? p.bt[static_cast<int64_t>(g) * p.stride + col] : 0;
    const int32_t q = p.qsl[j];
    const int32_t row = q < last ? q : last;
    p.out[i] = p.guess && row == g ? guessed : p.bt[static_cast<int64_t>(row) * p.stride + col];
  }
};

}  // namespace dspark::microbench_internal
