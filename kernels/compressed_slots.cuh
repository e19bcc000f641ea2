// Compressed (MLA ratio 1 / ratio 2) slot mapping, fused (PR #56562 semantics): one launch
// over the whole persistent buffer fills it with -1 and writes the compressed slot of every
// valid token, reading only device boundaries.
//
// For query token i of request b (t = qsl[b] + i < M = qsl[R]):
//   pos   = seq_lens[b] - qlen_b + i
//   valid = (pos + 1) % ratio == 0  and  slot_mapping[t] != -1
//   cp    = pos / ratio,  S = block_size / ratio
//   out[t] = valid ? max(bt[b, cp / S], 0) * S + cp % S : -1
// Every other entry of out[0, capacity) is -1. The block-table clamp to >= 0 is vLLM's; with
// this project's tables (block 0 = null page, no negative ids) it changes nothing.
//
// Preconditions on device data: qsl non-decreasing, qsl[R] <= N, block_table has a column for
// every compressed position of every request.
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

struct CompressedSlotParams {
  const int32_t* query_start_loc;  // [num_reqs + 1] device boundaries, non-decreasing
  const int32_t* seq_lens;         // [num_reqs] context incl. current query
  const int32_t* block_table;      // [num_reqs, bt_stride] compressed-cache block ids
  const int64_t* slot_mapping;     // [>= qsl[num_reqs]] ordinary KV slot per token, -1 = not stored
  const int32_t* token_to_req;     // [>= qsl[num_reqs]] request per token from the mapping
                                   //   kernel, or nullptr to search query_start_loc per block
  int64_t* out;                    // [capacity] compressed slot per token, -1 where none
  int32_t num_reqs;                // R: requests incl. zero-length padding requests
  int32_t capacity;                // [tokens] entries of out written
  int32_t bt_stride;               // [int32] row stride of block_table
  int32_t ratio;                   // [tokens per compressed entry] 1, 2 (V4.1), 4 or 128 (V4)
  int32_t block_size;              // [tokens per block] uncompressed block size (mla_block_size)
  // 1: a token whose own slot_mapping is -1 still gets its slot (the indexer's call of
  // get_compressed_slot_mapping uses the older signature without slot_mapping).
  int32_t ignore_slot_mapping = 0;
};

inline CompressedSlotParams MakeCompressedSlotParams(const BatchSizes& s, const DeviceBatch& d,
                                                     const ModelConsts& m, int32_t ratio,
                                                     const int32_t* token_to_req, int64_t* out) {
  return CompressedSlotParams{d.query_start_loc, d.seq_lens, d.block_table, d.slot_mapping, token_to_req,
                              out, s.num_reqs, s.capacity, s.bt_stride, ratio, m.mla_block_size};
}

inline absl::Status CanImplementCompressedSlots(const CompressedSlotParams& p) {
  if (p.query_start_loc == nullptr || p.seq_lens == nullptr || p.block_table == nullptr ||
      p.slot_mapping == nullptr || p.out == nullptr)
    return absl::InvalidArgumentError(
        "CompressedSlotParams: query_start_loc, seq_lens, block_table, slot_mapping and out must be non-null");
  if (p.num_reqs < 0 || p.capacity < 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "CompressedSlotParams: num_reqs=%d and capacity=%d must be >= 0", p.num_reqs, p.capacity));
  if (p.ratio != 1 && p.ratio != 2 && p.ratio != 4 && p.ratio != 128)
    return absl::InvalidArgumentError(
        absl::StrFormat("CompressedSlotParams: ratio=%d, expected 1 or 2 (DeepSeek-V4.1) or 4 or 128 (DeepSeek-V4)", p.ratio));
  if (p.block_size < p.ratio || p.block_size % p.ratio != 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "CompressedSlotParams: block_size=%d must be a positive multiple of ratio=%d", p.block_size, p.ratio));
  if (p.bt_stride < 0)
    return absl::InvalidArgumentError(
        absl::StrFormat("CompressedSlotParams: bt_stride=%d must be >= 0", p.bt_stride));
  return absl::OkStatus();
}

// Compressed slot of token t given that its slot_mapping entry is not -1 (the caller read it), or
// -1. Lets a caller that loaded slot_mapping[t] early skip a second, dependent read.
DS_HD_INLINE int64_t CompressedSlotOfStoredToken(const CompressedSlotParams& p, const int32_t* qsl, int32_t t) {
  if (t >= qsl[p.num_reqs]) return -1;
  const int32_t r = RequestOfToken(p.token_to_req, qsl, p.num_reqs, t);
  const int32_t pos = TokenPosition(qsl, p.seq_lens, r, t);
  if ((pos + 1) % p.ratio != 0) return -1;
  const int32_t cp = pos / p.ratio;
  const int32_t per_block = p.block_size / p.ratio;
  const int32_t blk = MaxI(p.block_table[static_cast<int64_t>(r) * p.bt_stride + cp / per_block], 0);
  return static_cast<int64_t>(blk) * per_block + cp % per_block;
}

// Compressed slot of token t, or -1. `qsl` is the boundaries to read (shared or global); t may
// be any index of out.
DS_HD_INLINE int64_t CompressedSlotOfToken(const CompressedSlotParams& p, const int32_t* qsl, int32_t t) {
  if (t >= qsl[p.num_reqs] || (p.ignore_slot_mapping == 0 && p.slot_mapping[t] == -1)) return -1;
  return CompressedSlotOfStoredToken(p, qsl, t);
}

// The compressed slot as PerTokenSlotKernel's slot function.
struct CompressedSlotFn {
  DS_HD int64_t operator()(const CompressedSlotParams& p, const int32_t* qsl, int32_t t) const {
    return CompressedSlotOfToken(p, qsl, t);
  }
};

using CompressedSlotKernel = PerTokenSlotKernel<CompressedSlotParams, CompressedSlotFn>;

#if defined(__CUDACC__)
inline cudaError_t LaunchCompressedSlots(const CompressedSlotParams& p, cudaStream_t stream) {
  return LaunchFunctor(CompressedSlotKernel{p}, CompressedSlotKernel::Shape(p), stream);
}
#endif

inline void EmulateCompressedSlots(const CompressedSlotParams& p) {
  EmulateGrid(CompressedSlotKernel{p}, CompressedSlotKernel::Shape(p));
}

}  // namespace dspark
