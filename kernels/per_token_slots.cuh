// One kernel for the fused per-token slot mappings (PR #56562 semantics): one launch over the
// whole persistent buffer writes the slot of every token, or -1, reading only device boundaries.
// The compressed (compressed_slots.cuh) and compressor-ring (ring_slots.cuh) mappings differ only
// in the slot of one token, which each gives as a functor:
//
//   struct SlotFn {
//     DS_HD int64_t operator()(const Params& p, const int32_t* qsl, int32_t t) const;
//   };
//
// returning token t's slot or -1 for any index t of out (t >= qsl[num_reqs] included), where
// `qsl` is the boundaries to read (shared or global, see QslView). Params holds query_start_loc,
// token_to_req, out, num_reqs and capacity as the two params structs name them.
#pragma once

#include <cstdint>

#include "kernels/builder_lookup.cuh"
#include "kernels/common/clean_pages.h"
#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

namespace dspark {

template <class Params, class SlotFn>
struct PerTokenSlotKernel {
  static constexpr int32_t kTokensPerBlock = 256;
  static constexpr int kPhases = 2;
  using Shared = QslShared;
  Params p;

  static LaunchShape Shape(const Params& p) { return {CeilDiv(p.capacity, kTokensPerBlock), kTokensPerBlock}; }

  DS_HD void Phase(int phase, const ThreadCtx& c, Shared& s) const {
    if (phase == 0) {
      LoadSharedQsl(p.query_start_loc, p.token_to_req, p.num_reqs, c, s);
      return;
    }
    const int32_t t = c.block * kTokensPerBlock + c.thread;
    if (t >= p.capacity) return;
    p.out[t] = SlotFn{}(p, QslView(p.query_start_loc, p.token_to_req, p.num_reqs, s), t);
  }

  // CPU path: the slot function over the real tokens, reading the global boundaries (the shared
  // copy holds the same values); every t >= qsl[R] gets the one value it returns there.
  void CpuRun(LaunchShape shape) const {
    const int32_t n = MinI(shape.grid * kTokensPerBlock, p.capacity);
    const int32_t* qsl = p.query_start_loc;
    const int32_t real = MaxI(MinI(qsl[p.num_reqs], n), 0);
    const SlotFn slot{};
    for (int32_t t = 0; t < real; ++t) p.out[t] = slot(p, qsl, t);
    if (real < n) clean_pages::TailFill(p.out + real, p.out + n, slot(p, qsl, real));
  }
};

}  // namespace dspark
