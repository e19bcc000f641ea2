// token_to_req_indices, fused (PR #56562 semantics): one launch, 256 tokens per block, each
// token binary-searches the *device* query_start_loc. No host boundary is read, so a CUDA graph
// replayed after adaptive verification rewrote the boundaries still maps every token right.
//
//   out[t] = min{ r : qsl[r + 1] > t }   for t < M = qsl[R]
//   out[t] = 0                           for M <= t < N
// vLLM's CommonAttentionMetadata.token_to_req_indices (0.30.0-0.34.0) takes M from the HOST,
// num_mapped = int(query_start_loc_cpu[-1]), and writes max(num_mapped, N) entries: set
// num_mapped (and num_tokens to that maximum) to follow it. Adaptive verification keeps the host
// total right, so the two agree whenever the host total is the device's.
#pragma once

#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

namespace dspark {

// Requests whose boundaries a block caches in shared memory; larger batches search global.
inline constexpr int32_t kSharedQslCap = 1024;

struct TokenMapParams {
  const int32_t* query_start_loc;  // [num_reqs + 1] device boundaries, non-decreasing
  int32_t* out;                    // [>= num_tokens] caller's buffer, written in place
  int32_t num_reqs;                // R: requests incl. zero-length padding requests
  int32_t num_tokens;              // N: [tokens] entries written (M real, then zeros)
  int32_t num_mapped = -1;         // tokens below this are mapped; -1: the device total qsl[R]
};

// Smallest r in [0, num_reqs) with qsl[r + 1] > t, for 0 <= t < qsl[num_reqs]. Zero-length
// requests have qsl[r + 1] == qsl[r] and are therefore never returned.
DS_HD_INLINE int32_t FindRequest(const int32_t* qsl, int32_t num_reqs, int32_t t) {
  int32_t lo = 0, hi = num_reqs - 1;
  DS_NO_UNROLL
  while (lo < hi) {
    const int32_t mid = (lo + hi) >> 1;
    if (qsl[mid + 1] > t) hi = mid; else lo = mid + 1;
  }
  return lo;
}

struct TokenMapKernel {
  static constexpr int32_t kTokensPerBlock = 256;
  static constexpr int kPhases = 2;
  struct Shared {
    int32_t qsl[kSharedQslCap + 1];
  };
  TokenMapParams p;

  static LaunchShape Shape(const TokenMapParams& p) {
    return {CeilDiv(p.num_tokens, kTokensPerBlock), kTokensPerBlock};
  }

  DS_HD void Phase(int phase, const ThreadCtx& c, Shared& s) const {
    const bool cached = p.num_reqs <= kSharedQslCap;
    if (phase == 0) {
      // One independent load per boundary, instead of a dependent chain per search step.
      if (cached)
        DS_NO_UNROLL
        for (int32_t i = c.thread; i <= p.num_reqs; i += c.block_dim) s.qsl[i] = p.query_start_loc[i];
      return;
    }
    const int32_t t = c.block * kTokensPerBlock + c.thread;
    if (t >= p.num_tokens) return;
    p.out[t] = RequestOrZero(cached ? s.qsl : p.query_start_loc, p.num_reqs, t, p.num_mapped);
  }

  // Token t's entry: its request, 0 for padding (t >= qsl[R], or t >= num_mapped when given).
  DS_HD static int32_t RequestOrZero(const int32_t* qsl, int32_t num_reqs, int32_t t, int32_t num_mapped) {
    return t < (num_mapped >= 0 ? num_mapped : qsl[num_reqs]) ? FindRequest(qsl, num_reqs, t) : 0;
  }

  // CPU path: the entry of every token, from the global boundaries (the shared copy's values).
  void CpuRun(LaunchShape shape) const {
    const int32_t n = MinI(shape.grid * kTokensPerBlock, p.num_tokens);
    for (int32_t t = 0; t < n; ++t) p.out[t] = RequestOrZero(p.query_start_loc, p.num_reqs, t, p.num_mapped);
  }
};

#if defined(__CUDACC__)
inline cudaError_t LaunchTokenMap(const TokenMapParams& p, cudaStream_t stream) {
  return LaunchFunctor(TokenMapKernel{p}, TokenMapKernel::Shape(p), stream);
}
#endif

inline void EmulateTokenMap(const TokenMapParams& p) { EmulateGrid(TokenMapKernel{p}, TokenMapKernel::Shape(p)); }

}  // namespace dspark
