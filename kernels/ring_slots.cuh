// Compressor ring slot mapping for ratio-2 layers, fused (PR #56562 semantics): one launch over
// the whole persistent buffer, reading only device boundaries.
//
// The ratio-2 compressor keeps its not-yet-compressed state in a ring of CAP slots per request,
// CAP = CompressorRingCapacity(K) = max(8, next_pow2(K + 2)), held in the request's first block.
// For token t < M = qsl[R] of request r:
//   pos    = seq_lens[r] - qlen_r + (t - qsl[r])
//   blk    = block_table[r, 0]
//   out[t] = blk > 0 ? blk * CAP + pos % CAP : -1      (block 0 is the null page)
// Every t in [M, capacity) gets -1. docs/design.md says "for t < num_tokens" and "unused positions up
// to the buffer length are also -1"; graph padding tokens (M <= t < N) own no request, so they
// are unused positions too, and giving them -1 keeps the padding from writing into the ring of
// whichever request a padding token would be mapped to (request 0 by token_to_req_indices).
//
// Preconditions on device data: qsl non-decreasing, qsl[R] <= capacity, seq_lens[r] >= qlen_r
// (so pos >= 0).
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/batch.h"
#include "kernels/builder_lookup.cuh"
#include "kernels/common/grid.h"
#include "kernels/common/hd.h"
#include "kernels/per_token_slots.cuh"

namespace dspark {

struct RingSlotParams {
  const int32_t* query_start_loc;  // [num_reqs + 1] device boundaries, non-decreasing
  const int32_t* seq_lens;         // [num_reqs] context incl. current query
  const int32_t* block_table;      // [num_reqs, bt_stride] block ids; column 0 holds the ring
  const int32_t* token_to_req;     // [>= qsl[num_reqs]] request per token from the mapping
                                   //   kernel, or nullptr to search query_start_loc per block
  int64_t* out;                    // [capacity] ring slot per token, -1 where none
  int32_t num_reqs;                // R: requests incl. zero-length padding requests
  int32_t capacity;                // [tokens] entries of out written
  int32_t bt_stride;               // [int32] row stride of block_table
  int32_t ring_capacity;           // CAP: [slots per request] CompressorRingCapacity(K)
};

inline RingSlotParams MakeRingSlotParams(const BatchSizes& s, const DeviceBatch& d, const ModelConsts& m,
                                         const int32_t* token_to_req, int64_t* out) {
  return RingSlotParams{d.query_start_loc, d.seq_lens, d.block_table, token_to_req, out,
                        s.num_reqs,        s.capacity, s.bt_stride,   CompressorRingCapacity(m.spec_k)};
}

inline absl::Status CanImplementRingSlots(const RingSlotParams& p) {
  if (p.query_start_loc == nullptr || p.seq_lens == nullptr || p.block_table == nullptr || p.out == nullptr)
    return absl::InvalidArgumentError(
        "RingSlotParams: query_start_loc, seq_lens, block_table and out must be non-null");
  if (p.num_reqs < 0 || p.capacity < 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "RingSlotParams: num_reqs=%d and capacity=%d must be >= 0", p.num_reqs, p.capacity));
  if (p.ring_capacity < 1)
    return absl::InvalidArgumentError(
        absl::StrFormat("RingSlotParams: ring_capacity=%d must be >= 1", p.ring_capacity));
  if (p.bt_stride < 1 && p.num_reqs > 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "RingSlotParams: bt_stride=%d must be >= 1 (column 0 is read) when num_reqs > 0", p.bt_stride));
  return absl::OkStatus();
}

// Ring slot of token t, or -1. `qsl` is the boundaries to read (shared or global); t may be any
// index of out.
DS_HD_INLINE int64_t RingSlotOfToken(const RingSlotParams& p, const int32_t* qsl, int32_t t) {
  if (t >= qsl[p.num_reqs]) return -1;
  const int32_t r = RequestOfToken(p.token_to_req, qsl, p.num_reqs, t);
  const int32_t blk = p.block_table[static_cast<int64_t>(r) * p.bt_stride];
  if (blk <= 0) return -1;
  const int32_t pos = TokenPosition(qsl, p.seq_lens, r, t);
  return static_cast<int64_t>(blk) * p.ring_capacity + pos % p.ring_capacity;
}

// The ring slot as PerTokenSlotKernel's slot function.
struct RingSlotFn {
  DS_HD int64_t operator()(const RingSlotParams& p, const int32_t* qsl, int32_t t) const {
    return RingSlotOfToken(p, qsl, t);
  }
};

using RingSlotKernel = PerTokenSlotKernel<RingSlotParams, RingSlotFn>;

#if defined(__CUDACC__)
inline cudaError_t LaunchRingSlots(const RingSlotParams& p, cudaStream_t stream) {
  return LaunchFunctor(RingSlotKernel{p}, RingSlotKernel::Shape(p), stream);
}
#endif

inline void EmulateRingSlots(const RingSlotParams& p) { EmulateGrid(RingSlotKernel{p}, RingSlotKernel::Shape(p)); }

}  // namespace dspark
