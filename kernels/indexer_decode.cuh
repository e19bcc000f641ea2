// Indexer decode metadata, varlen path, fused (PR #56562 semantics, docs/design.md section 3): ONE
// launch flattens the decode requests' device query boundaries into per-token rows and clears
// the CUDA-graph padding, reading nothing from the host.
//
// With actual = qsl[num_decodes] read on the device, for token t < N_d, r = req(t),
// s = qsl[r], e = qsl[r + 1], valid = t < actual:
//   seq_out[t]       = valid ? seq_lens[r] - (e - s) + (t - s) + 1 : 0
//   decode_lens[t]   = 1
//   indices[t]       = valid ? r : num_decodes + t - actual
//   bt_out[t, :W]    = valid ? block_table[r, :W] : 0
//   per_req[r]       = qsl[r + 1] - qsl[r]            for r < num_decodes
//   seq_out[N_d : capacity] = 0
//
// Grid: max(num_decodes, N_d + ceil((capacity - N_d) / 256)) blocks of 128 threads. Block b
//   - b < N_d: token row b. The block loads qsl[0 .. num_decodes] into shared memory with one
//     independent load per lane and, beside it, guesses the token's request in proportion
//     (g = b * num_decodes / N_d, exact for uniform queries) and loads that request's
//     block-table row (lane i takes columns i, i + 128, ...) and sequence length into shared
//     memory too. After the barrier every lane searches the cached boundaries; when the search
//     agrees with the guess the row is stored from shared memory, otherwise it is loaded again
//     (every load of a lane issued before its first store). Cold-L2 cost: one global round trip
//     when the guess is right, two when not, never one per search step or per column group.
//   - N_d <= b < N_d + ceil((capacity - N_d) / 256): zeroes seq_out chunk b - N_d (256 entries).
//   - b < num_decodes: also writes per_req[b].
// Nothing else is written: rows >= N_d of bt_out, columns >= W, and decode_lens / indices past
// N_d keep their contents.
#pragma once

#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/common/clean_pages.h"
#include "kernels/common/grid.h"
#include "kernels/common/hd.h"
#include "kernels/token_map.cuh"

namespace dspark {

struct IndexerDecodeParams {
  const int32_t* query_start_loc;  // [num_decodes + 1] device boundaries, qsl[0] == 0
  const int32_t* seq_lens;         // [num_decodes] context incl. the current query
  const int32_t* block_table;      // [num_decodes, bt_stride] block ids
  int32_t* seq_out;                // [capacity] per-token causal length, tail zeroed
  int32_t* bt_out;                 // [>= num_decode_tokens, out_stride] expanded rows
  int32_t* decode_lens;            // [>= num_decode_tokens] all 1
  int32_t* indices;                // [>= num_decode_tokens] request id (fake id for padding)
  int32_t* per_req;                // [>= num_decodes] query length per decode request
  int32_t num_decodes;             // [requests]
  int32_t num_decode_tokens;       // N_d [tokens], padded
  int32_t capacity;                // [tokens] length of seq_out, >= N_d
  int32_t bt_width;                // W [blocks] columns copied per row
  int32_t bt_stride;               // [int32] row stride of block_table, >= W
  int32_t out_stride;              // [int32] row stride of bt_out, >= W
  // [log2 positions per entry] seq_out[t] for t < N_d is floor-divided by 1 << seq_shift: 0 for
  // vLLM's kernel (its ratio-2 builder divides afterwards, `seq_lens //= ratio`, a floor division
  // like the shift); 1 writes ratio 2's compressed lengths directly. A shift, not a division: a
  // runtime divisor costs ~25 instructions on the token row's critical warp.
  int32_t seq_shift = 0;
};

inline constexpr int32_t kIndexerThreads = 128;   // [threads per block]
inline constexpr int32_t kIndexerTailChunk = 256;  // [entries] of seq_out zeroed per tail block

DS_HD_INLINE int32_t IndexerTailBlocks(const IndexerDecodeParams& p) {
  return CeilDiv(p.capacity - p.num_decode_tokens, kIndexerTailChunk);
}
DS_HD_INLINE int32_t IndexerDecodeGrid(const IndexerDecodeParams& p) {
  return MaxI(p.num_decodes, p.num_decode_tokens + IndexerTailBlocks(p));
}

// The launcher's contract (host-side checks only; device data cannot be checked without a sync).
inline absl::Status CanImplementIndexerDecode(const IndexerDecodeParams& p) {
  if (p.num_decodes < 0 || p.num_decode_tokens < 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "indexer: num_decodes=%d and num_decode_tokens=%d must be >= 0", p.num_decodes, p.num_decode_tokens));
  if (p.capacity < p.num_decode_tokens)
    return absl::OutOfRangeError(absl::StrFormat(
        "indexer: capacity=%d must be >= num_decode_tokens=%d", p.capacity, p.num_decode_tokens));
  if (p.seq_shift < 0 || p.seq_shift > 1)
    return absl::InvalidArgumentError(absl::StrFormat("indexer: seq_shift=%d must be 0 or 1", p.seq_shift));
  if (p.bt_width < 0 || p.bt_stride < p.bt_width || p.out_stride < p.bt_width)
    return absl::InvalidArgumentError(absl::StrFormat(
        "indexer: bt_width=%d must be in [0, min(bt_stride=%d, out_stride=%d)]", p.bt_width, p.bt_stride,
        p.out_stride));
  if (p.query_start_loc == nullptr || (p.num_decodes > 0 && (p.seq_lens == nullptr || p.per_req == nullptr)) ||
      (p.num_decode_tokens > 0 && (p.decode_lens == nullptr || p.indices == nullptr)) ||
      (p.capacity > 0 && p.seq_out == nullptr) ||
      (p.bt_width > 0 && p.num_decodes > 0 && p.block_table == nullptr) ||
      (p.bt_width > 0 && p.num_decode_tokens > 0 && p.bt_out == nullptr))
    return absl::InvalidArgumentError("indexer: a pointer needed for these sizes is null");
  return absl::OkStatus();
}

// ---- Per-item work, shared with the later single-launch "fused-suite" kernel. ----

// The scalar fields of token t (one lane). `r`, `s`, `e` are the request and its boundaries;
// they are ignored when !valid.
// `seq_r` is seq_lens[r] (ignored when !valid).
DS_HD_INLINE void IndexerWriteTokenScalarsSeq(const IndexerDecodeParams& p, int32_t t, bool valid, int32_t r,
                                              int32_t s, int32_t e, int32_t actual, int32_t seq_r) {
  p.seq_out[t] = valid ? (seq_r - (e - s) + (t - s) + 1) >> p.seq_shift : 0;
  p.decode_lens[t] = 1;
  p.indices[t] = valid ? r : p.num_decodes + t - actual;
}
DS_HD_INLINE void IndexerWriteTokenScalars(const IndexerDecodeParams& p, int32_t t, bool valid, int32_t r,
                                           int32_t s, int32_t e, int32_t actual) {
  IndexerWriteTokenScalarsSeq(p, t, valid, r, s, e, actual, valid ? p.seq_lens[r] : 0);
}

// [columns per lane] a lane stages before storing (IndexerCopyTokenRow).
inline constexpr int32_t kIndexerStagedCols = 4;

// Row t of bt_out from `src` (a block-table row, or nullptr for zeros), columns lane,
// lane + lanes, ...: consecutive lanes touch consecutive words. Each lane loads
// kIndexerStagedCols columns before it stores any: a load-then-store loop would wait one global
// round trip per column group (the store may alias the next load).
DS_HD_INLINE void IndexerCopyRowFrom(const IndexerDecodeParams& p, int32_t t, const int32_t* src, int32_t lane,
                                     int32_t lanes) {
  int32_t* dst = p.bt_out + static_cast<int64_t>(t) * p.out_stride;
  DS_NO_UNROLL
  for (int32_t base = lane; base < p.bt_width; base += kIndexerStagedCols * lanes) {
    int32_t v[kIndexerStagedCols];
    for (int32_t i = 0; i < kIndexerStagedCols; ++i) {
      const int32_t col = base + i * lanes;
      v[i] = src != nullptr && col < p.bt_width ? src[col] : 0;
    }
    for (int32_t i = 0; i < kIndexerStagedCols; ++i) {
      const int32_t col = base + i * lanes;
      if (col < p.bt_width) dst[col] = v[i];
    }
  }
}
// The CPU path of IndexerCopyRowFrom with one lane of one: the same cells, the row in one copy
// (zeros in one fill when src is nullptr). src is the block table, never bt_out.
inline void IndexerCopyRowCpu(const IndexerDecodeParams& p, int32_t t, const int32_t* src) {
  if (p.bt_width <= 0) return;
  int32_t* dst = p.bt_out + static_cast<int64_t>(t) * p.out_stride;
  const size_t bytes = static_cast<size_t>(p.bt_width) * sizeof(int32_t);
  if (src != nullptr) std::memcpy(dst, src, bytes);
  else std::memset(dst, 0, bytes);
}
// The block-table row token row t copies: request r's, or nullptr (zeros) when !valid.
DS_HD_INLINE const int32_t* IndexerRowSource(const IndexerDecodeParams& p, bool valid, int32_t r) {
  return valid ? p.block_table + static_cast<int64_t>(r) * p.bt_stride : nullptr;
}
// Row t of bt_out for request r (zeros when !valid).
DS_HD_INLINE void IndexerCopyTokenRow(const IndexerDecodeParams& p, int32_t t, bool valid, int32_t r,
                                      int32_t lane, int32_t lanes) {
  IndexerCopyRowFrom(p, t, IndexerRowSource(p, valid, r), lane, lanes);
}

// seq_out[N_d + chunk * 256, ...) = 0, clipped at capacity.
DS_HD_INLINE void IndexerZeroSeqTail(const IndexerDecodeParams& p, int32_t chunk, int32_t lane, int32_t lanes) {
  const int32_t begin = p.num_decode_tokens + chunk * kIndexerTailChunk;
  const int32_t end = MinI(begin + kIndexerTailChunk, p.capacity);
  DS_NO_UNROLL
  for (int32_t i = begin + lane; i < end; i += lanes) p.seq_out[i] = 0;
}

DS_HD_INLINE void IndexerWritePerReq(const IndexerDecodeParams& p, const int32_t* qsl, int32_t r) {
  p.per_req[r] = qsl[r + 1] - qsl[r];
}

struct IndexerDecodeKernel {
  static constexpr int kPhases = 2;
  // [columns] a guessed row fits the staging buffer when bt_width is at most this.
  static constexpr int32_t kGuessCols = kIndexerThreads * kIndexerStagedCols;
  struct Shared {
    int32_t qsl[kSharedQslCap + 1];
    int32_t row[kGuessCols];  // the guessed request's block-table row
    int32_t guess_seq;        // the guessed request's sequence length
  };
  IndexerDecodeParams p;
  // ceil(2^32 * num_decodes / N_d) (at most 2^32), or 0 when the blocks do not guess
  // (GuessMul). Computed once per launch on the host, so a token block's guess is a multiply and
  // a shift instead of the ~20 instructions of a 32-bit division, twice (once per phase).
  uint64_t guess_mul = 0;

  // The kernel of a launch: `p` and its guess multiplier.
  static IndexerDecodeKernel Make(const IndexerDecodeParams& p) { return IndexerDecodeKernel{p, GuessMul(p)}; }

  // The guess of token row b is floor(b * num_decodes / N_d) (exact for uniform queries: with
  // N_d = num_decodes * q it is b / q, the row's request). b * ceil(2^32 / q) >> 32 gives b / q
  // exactly when b * q < 2^32 (decode: q <= 1 + K); anything else is a hint the search verifies. 0 (no guess)
  // when the boundaries are not cached, the row does not fit the staging buffer, or N_d is out
  // of that range.
  static uint64_t GuessMul(const IndexerDecodeParams& p) {
    if (p.num_decodes <= 0 || p.num_decodes > kSharedQslCap || p.num_decode_tokens < p.num_decodes ||
        p.num_decode_tokens > (1 << 22) || p.bt_width > kGuessCols)
      return 0;
    const uint64_t n = static_cast<uint64_t>(p.num_decode_tokens);
    return ((static_cast<uint64_t>(p.num_decodes) << 32) + n - 1) / n;
  }

  static LaunchShape Shape(const IndexerDecodeParams& p) { return {IndexerDecodeGrid(p), kIndexerThreads}; }

  DS_HD bool UsesSharedQsl(int32_t block) const {
    return block < p.num_decode_tokens && p.num_decodes <= kSharedQslCap;
  }
  // The guessed request of token row b, or -1 when this block does not guess.
  DS_HD int32_t Guess(int32_t b) const {
    if (guess_mul == 0 || b >= p.num_decode_tokens) return -1;
    // b < N_d <= 2^22 and guess_mul <= 2^32: the product fits 54 bits.
    return MinI(static_cast<int32_t>((static_cast<uint64_t>(b) * guess_mul) >> 32), p.num_decodes - 1);
  }

  DS_HD void Phase(int phase, const ThreadCtx& c, Shared& s) const {
    const int32_t b = c.block;
    const int32_t g = Guess(b);
    if (phase == 0) {
      // Boundaries, the guessed row and length, and tail zeroing are independent: all issued
      // before the barrier.
      if (UsesSharedQsl(b))
        DS_NO_UNROLL
        for (int32_t i = c.thread; i <= p.num_decodes; i += c.block_dim) s.qsl[i] = p.query_start_loc[i];
      if (g >= 0) {
        const int32_t* src = p.block_table + static_cast<int64_t>(g) * p.bt_stride;
        int32_t v[kIndexerStagedCols];
        for (int32_t i = 0; i < kIndexerStagedCols; ++i) {
          const int32_t col = c.thread + i * c.block_dim;
          v[i] = col < p.bt_width ? src[col] : 0;
        }
        for (int32_t i = 0; i < kIndexerStagedCols; ++i) s.row[c.thread + i * c.block_dim] = v[i];
        if (c.thread == 0) s.guess_seq = p.seq_lens[g];
      }
      const int32_t chunk = b - p.num_decode_tokens;
      if (chunk >= 0 && chunk < IndexerTailBlocks(p)) IndexerZeroSeqTail(p, chunk, c.thread, c.block_dim);
      return;
    }
    const int32_t* qsl = UsesSharedQsl(b) ? s.qsl : p.query_start_loc;
    if (b < p.num_decode_tokens) {
      const int32_t t = b;
      const int32_t actual = qsl[p.num_decodes];
      const bool valid = t < actual;
      // Every lane searches the cached boundaries itself (broadcast reads), so no second
      // barrier is needed to share the result.
      const int32_t r = valid ? FindRequest(qsl, p.num_decodes, t) : 0;
      const int32_t s_r = valid ? qsl[r] : 0;
      const int32_t e_r = valid ? qsl[r + 1] : 0;
      const bool hit = valid && r == g;
      if (c.thread == 0)
        IndexerWriteTokenScalarsSeq(p, t, valid, r, s_r, e_r, actual,
                                    hit ? s.guess_seq : (valid ? p.seq_lens[r] : 0));
      // One copy loop for both cases, so a hit runs straight through: from the staged row on a
      // hit, from the block table otherwise (a miss, or zeros for a padding row).
      IndexerCopyRowFrom(p, t, hit ? s.row : IndexerRowSource(p, valid, r), c.thread, c.block_dim);
    }
    if (b < p.num_decodes && c.thread == 0) IndexerWritePerReq(p, qsl, b);
  }

  // CPU path: each token row by one lane of one, reading the global boundaries and seq_lens
  // (the staged guess holds the same values: a hit stores row r, as the copy does), the seq_out
  // tail and per_req likewise. Blocks write disjoint cells, so the order does not matter.
  void CpuRun(LaunchShape shape) const {
    const int32_t* qsl = p.query_start_loc;
    const int32_t rows = MinI(shape.grid, p.num_decode_tokens);
    const int32_t actual = rows > 0 ? qsl[p.num_decodes] : 0;
    for (int32_t t = 0; t < rows; ++t) {
      const bool valid = t < actual;
      const int32_t r = valid ? FindRequest(qsl, p.num_decodes, t) : 0;
      IndexerWriteTokenScalars(p, t, valid, r, valid ? qsl[r] : 0, valid ? qsl[r + 1] : 0, actual);
      IndexerCopyRowCpu(p, t, IndexerRowSource(p, valid, r));
    }
    // The seq_out tail chunks [0, tails): IndexerZeroSeqTail's cells, one fill.
    const int32_t tails = MinI(IndexerTailBlocks(p), shape.grid - p.num_decode_tokens);
    if (tails > 0)
      clean_pages::TailFill(p.seq_out + p.num_decode_tokens,
                            p.seq_out + MinI(p.num_decode_tokens + tails * kIndexerTailChunk, p.capacity), 0);
    for (int32_t b = 0; b < MinI(shape.grid, p.num_decodes); ++b) IndexerWritePerReq(p, qsl, b);
  }
};

#if defined(__CUDACC__)
inline cudaError_t LaunchIndexerDecode(const IndexerDecodeParams& p, cudaStream_t stream) {
  return LaunchFunctor(IndexerDecodeKernel::Make(p), IndexerDecodeKernel::Shape(p), stream);
}
#endif

inline void EmulateIndexerDecode(const IndexerDecodeParams& p) {
  EmulateGrid(IndexerDecodeKernel::Make(p), IndexerDecodeKernel::Shape(p));
}

}  // namespace dspark
