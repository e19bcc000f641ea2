// Per-token request lookup shared by the fused SWA, compressed-slot and compressor-ring kernels.
//
// A builder finds the request of token t in one of two ways, chosen per launch:
//  - `token_to_req != nullptr`: read the mapping the token-mapping kernel (token_map.cuh) wrote
//    earlier in the same step. This is the `fused` impl of PR #56562: the mapping runs once
//    and every builder shares it.
//  - `token_to_req == nullptr`: binary-search the device query_start_loc, cached once per block
//    in shared memory (global memory when the batch has more than kSharedQslCap requests).
//    Needs no earlier kernel, so a single-launch suite can use it.
// Either way only device boundaries are read; no host state enters a kernel.
#pragma once

#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"
#include "kernels/token_map.cuh"

namespace dspark {

// Block-shared copy of query_start_loc.
struct QslShared {
  int32_t qsl[kSharedQslCap + 1];
};

// Whether a block searches a shared-memory copy of qsl (see file comment).
DS_HD_INLINE bool UsesSharedQsl(const int32_t* token_to_req, int32_t num_reqs) {
  return token_to_req == nullptr && num_reqs <= kSharedQslCap;
}

// Phase-0 body: one coalesced load per boundary instead of a dependent chain of global loads
// per search step.
DS_HD_INLINE void LoadSharedQsl(const int32_t* qsl, const int32_t* token_to_req, int32_t num_reqs,
                                const ThreadCtx& c, QslShared& s) {
  if (!UsesSharedQsl(token_to_req, num_reqs)) return;
  for (int32_t i = c.thread; i <= num_reqs; i += c.block_dim) s.qsl[i] = qsl[i];
}

// The boundaries later phases read: the shared copy when one was loaded, else global memory.
DS_HD_INLINE const int32_t* QslView(const int32_t* qsl, const int32_t* token_to_req, int32_t num_reqs,
                                    const QslShared& s) {
  return UsesSharedQsl(token_to_req, num_reqs) ? s.qsl : qsl;
}

// Request owning token t. Precondition: t < qsl[num_reqs] (token t is real).
DS_HD_INLINE int32_t RequestOfToken(const int32_t* token_to_req, const int32_t* qsl, int32_t num_reqs,
                                    int32_t t) {
  return token_to_req != nullptr ? token_to_req[t] : FindRequest(qsl, num_reqs, t);
}

// Absolute position of token t of request r: seq_len - qlen + (t - qstart).
DS_HD_INLINE int32_t TokenPosition(const int32_t* qsl, const int32_t* seq_lens, int32_t r, int32_t t) {
  const int32_t qstart = qsl[r];
  const int32_t qlen = qsl[r + 1] - qstart;
  return seq_lens[r] - qlen + (t - qstart);
}

}  // namespace dspark
