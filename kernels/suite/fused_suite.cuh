// fused-suite: the whole builder suite of one step in ONE launch (this project's own step past
// PR #56562). It writes exactly the cells that the `fused` implementation's eight launches write
// (kernels/suite/suite.h lists them), reads only device boundaries, and chooses its grid from
// host-known sizes only (N, N_d, num_decodes, capacity, R, the buffer lengths), so a captured
// graph replayed after the device rewrote query_start_loc or seq_lens builds the new metadata.
//
// The per-item work is the builders' own DS_HD functions (SwaResolveRow / SwaWriteRow,
// CompressedSlotOfToken, RingSlotOfToken, IndexerWriteTokenScalars / IndexerCopyTokenRow /
// IndexerWritePerReq, PrefillSegmentsPhase); this file only decides who does what, when.
//
// Grid: 1 + token_blocks + tail_blocks blocks of 256 threads.
//   block 0        the prefill segmentation (PrefillSegmentsPhase, 10 barrier phases), for
//                  segment indices [0, seg_bound]: seg_bound = PrefillSegmentBound(R - nd, N, S)
//                  bounds the count whenever qsl[R] <= N, so the block's share does not grow
//                  with the persistent buffer.
//   token blocks   kTokensPerBlock = 4 tokens each, 64 lanes per token. Phase 0 loads
//                  qsl[0..R] and seq_lens[0..R) into shared memory with one independent load per
//                  lane (both before the barrier, so one DRAM round trip covers them) and issues
//                  each token's slot_mapping load alongside. Phase 1: every lane of a token
//                  searches the shared boundaries (broadcast reads), then
//                    all 64 lanes  the SWA row (128 cells, 2 per lane, coalesced) and both
//                                  indexer block-table rows (column lane, lane + 64, ...);
//                    lane 1        token_to_req[t];  lanes 2, 3, 4  the MLA r1, r2 and ring
//                                  slots of t;  lanes 5, 6  the indexer scalars per ratio;
//                    lane 7        per_req[t] of both ratios, for t < num_decodes.
//                  The block-table reads are the only global loads that depend on the
//                  boundaries: two dependent DRAM round trips per token in all.
//   tail blocks    kTailChunk entries of every tail region each, stores only (plus one load of
//                  qsl[R] for the segment starts): seq_out[N_d, C) = 0 (both ratios), the three
//                  int64 slot buffers [N, C) = -1, seg_seq_lens[seg_bound, max_segments) = 0,
//                  seg_qsl[seg_bound + 1, max_segments] = qsl[R].
// Token blocks cover max(N, num_decodes) items, so per_req gets a writer even when zero-length
// decode requests outnumber the decode tokens. With more than kSharedQslCap requests the
// boundaries and sequence lengths are read from global memory instead.
//
// Preconditions on device data (not checkable without a sync), those of the builders:
// qsl non-decreasing, qsl[R] <= N, qsl[nd] <= N_d, block_table covering every position.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/batch.h"
#include "kernels/common/grid.h"
#include "kernels/common/hd.h"
#include "kernels/common/status_macros.h"
#include "kernels/compressed_slots.cuh"
#include "kernels/indexer_decode.cuh"
#include "kernels/prefill_segments.cuh"
#include "kernels/ring_slots.cuh"
#include "kernels/swa.cuh"
#include "kernels/token_map.cuh"

namespace dspark {

struct FusedSuiteParams {
  const int32_t* query_start_loc;  // [num_reqs + 1] device boundaries
  const int32_t* seq_lens;         // [num_reqs] device sequence lengths
  const int64_t* slot_mapping;     // [num_tokens] KV slot per token
  int32_t* token_to_req;           // [>= num_tokens] request per token, 0 for padding
  SwaParams swa;                   // token_to_req == nullptr: rows search the boundaries
  CompressedSlotParams mla[2];     // ratio 1, ratio 2 (token_to_req == nullptr)
  RingSlotParams ring;             // token_to_req == nullptr
  IndexerDecodeParams indexer[2];  // ratio 1, ratio 2
  PrefillSegmentParams seg;        // max_segments = the whole persistent buffer
  int32_t num_reqs;                // R [requests]
  int32_t num_tokens;              // N [tokens]
  int32_t num_decodes;             // nd [requests]
  int32_t num_decode_tokens;       // N_d [tokens]
  int32_t capacity;                // C [tokens] of the per-token buffers this step writes
  int32_t token_blocks;            // [blocks] CeilDiv(max(N, nd), kTokensPerBlock)
  int32_t tail_blocks;             // [blocks]
  int32_t seg_bound;               // [segments] segment entries block 0 writes (see file comment)
};

struct FusedSuiteKernel {
  static constexpr int32_t kThreads = 256;
  static constexpr int32_t kLanesPerToken = 64;
  static constexpr int32_t kTokensPerBlock = kThreads / kLanesPerToken;
  static constexpr int32_t kTailChunk = 1024;  // [entries] of each tail region per tail block
  static constexpr int kPhases = kPrefillSegmentPhases;
  static_assert(kThreads == kPrefillSegmentThreads, "block 0 runs the segmentation with every thread");
  static_assert(kLanesPerToken >= 8, "lanes 1..7 of a token carry the scalar outputs");

  struct TokenShared {
    int32_t qsl[kSharedQslCap + 1];
    int32_t seq_lens[kSharedQslCap];
    int64_t slot[kTokensPerBlock];  // slot_mapping of the block's tokens, loaded in phase 0
  };
  struct Shared {
    union {
      TokenShared tok;
      PrefillSegmentShared seg;
    } u;
  };

  FusedSuiteParams p;

  static LaunchShape Shape(const FusedSuiteParams& p) { return {1 + p.token_blocks + p.tail_blocks, kThreads}; }

  DS_HD void Phase(int phase, const ThreadCtx& c, Shared& s) const {
    if (c.block == 0) {
      PrefillSegmentParams seg = p.seg;
      seg.max_segments = p.seg_bound;  // the tail blocks write the rest of the buffer
      PrefillSegmentsPhase(seg, phase, c.thread, s.u.seg);
      return;
    }
    const int32_t b = c.block - 1;
    if (b < p.token_blocks) {
      if (phase == 0) LoadTokenBlock(b, c.thread, s.u.tok);
      if (phase == 1) WriteTokenBlock(b, c.thread, s.u.tok);
      return;
    }
    if (phase == 0) WriteTail(b - p.token_blocks, c.thread);
  }

  DS_HD bool CachesBoundaries() const { return p.num_reqs <= kSharedQslCap; }

  DS_HD void LoadTokenBlock(int32_t b, int32_t thread, TokenShared& s) const {
    if (CachesBoundaries()) {
      for (int32_t i = thread; i <= p.num_reqs; i += kThreads) s.qsl[i] = p.query_start_loc[i];
      for (int32_t i = thread; i < p.num_reqs; i += kThreads) s.seq_lens[i] = p.seq_lens[i];
    }
    // Issued with the boundary loads: the MLA lanes re-read slot_mapping[t] in phase 1 and hit
    // L1 instead of adding a third DRAM round trip to the token's dependent chain.
    if (thread % kLanesPerToken == 0) {
      const int32_t g = thread / kLanesPerToken;
      const int32_t t = b * kTokensPerBlock + g;
      s.slot[g] = t < p.num_tokens ? p.slot_mapping[t] : -1;
    }
  }

  DS_HD void WriteTokenBlock(int32_t b, int32_t thread, const TokenShared& s) const {
    const int32_t lane = thread % kLanesPerToken;
    const int32_t g = thread / kLanesPerToken;
    const int32_t t = b * kTokensPerBlock + g;
    const int32_t* qsl = CachesBoundaries() ? s.qsl : p.query_start_loc;
    const int32_t* seq_lens = CachesBoundaries() ? s.seq_lens : p.seq_lens;

    if (t < p.num_tokens) {
      SwaParams swa = p.swa;
      swa.seq_lens = seq_lens;
      SwaWriteRow(swa, t, SwaResolveRow(swa, qsl, t), lane, kLanesPerToken);
      if (lane == 1) p.token_to_req[t] = t < qsl[p.num_reqs] ? FindRequest(qsl, p.num_reqs, t) : 0;
      if (lane == 2 || lane == 3) {
        CompressedSlotParams mla = p.mla[lane - 2];
        mla.seq_lens = seq_lens;
        mla.out[t] = s.slot[g] == -1 ? int64_t{-1} : CompressedSlotOfToken(mla, qsl, t);
      }
      if (lane == 4) {
        RingSlotParams ring = p.ring;
        ring.seq_lens = seq_lens;
        ring.out[t] = RingSlotOfToken(ring, qsl, t);
      }
    }
    if (t < p.num_decode_tokens) {
      const int32_t actual = qsl[p.num_decodes];
      const bool valid = t < actual;
      const int32_t r = valid ? FindRequest(qsl, p.num_decodes, t) : 0;
      const int32_t start = valid ? qsl[r] : 0;
      const int32_t end = valid ? qsl[r + 1] : 0;
      for (int k = 0; k < 2; ++k) {
        IndexerDecodeParams ip = p.indexer[k];
        ip.seq_lens = seq_lens;
        if (lane == 5 + k) IndexerWriteTokenScalars(ip, t, valid, r, start, end, actual);
        IndexerCopyTokenRow(ip, t, valid, r, lane, kLanesPerToken);
      }
    }
    if (t < p.num_decodes && lane == 7) {
      IndexerWritePerReq(p.indexer[0], qsl, t);
      IndexerWritePerReq(p.indexer[1], qsl, t);
    }
  }

  DS_HD void WriteTail(int32_t j, int32_t thread) const {
    const int32_t offset = j * kTailChunk;
    {
      const int32_t begin = p.num_decode_tokens + offset;
      const int32_t end = MinI(begin + kTailChunk, p.capacity);
      for (int32_t i = begin + thread; i < end; i += kThreads) {
        p.indexer[0].seq_out[i] = 0;
        p.indexer[1].seq_out[i] = 0;
      }
    }
    {
      const int32_t begin = p.num_tokens + offset;
      const int32_t end = MinI(begin + kTailChunk, p.capacity);
      for (int32_t i = begin + thread; i < end; i += kThreads) {
        p.mla[0].out[i] = -1;
        p.mla[1].out[i] = -1;
        p.ring.out[i] = -1;
      }
    }
    {
      const int32_t begin = p.seg_bound + offset;
      const int32_t end = MinI(begin + kTailChunk, p.seg.max_segments);
      for (int32_t k = begin + thread; k < end; k += kThreads) p.seg.seg_seq_lens[k] = 0;
    }
    {
      const int32_t begin = p.seg_bound + 1 + offset;
      const int32_t end = MinI(begin + kTailChunk, p.seg.max_segments + 1);
      if (begin + thread < end) {
        const int32_t last = p.query_start_loc[p.num_reqs];
        for (int32_t k = begin + thread; k < end; k += kThreads) p.seg.seg_qsl[k] = last;
      }
    }
  }
};

// Fills the grid partition of `p` from its sizes (host-known values only).
inline void PlanFusedSuiteGrid(FusedSuiteParams& p) {
  using K = FusedSuiteKernel;
  p.token_blocks = CeilDiv(MaxI(p.num_tokens, p.num_decodes), K::kTokensPerBlock);
  p.seg_bound = MinI(PrefillSegmentBound(p.num_reqs - p.num_decodes, p.num_tokens, p.seg.segment_len),
                     p.seg.max_segments);
  const int32_t tail = MaxI(MaxI(p.capacity - p.num_decode_tokens, p.capacity - p.num_tokens),
                            p.seg.max_segments - p.seg_bound);
  p.tail_blocks = CeilDiv(MaxI(tail, 0), K::kTailChunk);
}

// The launcher's contract: every builder's own contract, plus the suite's size relations.
inline absl::Status CanImplementFusedSuite(const FusedSuiteParams& p) {
  if (p.query_start_loc == nullptr || p.seq_lens == nullptr || p.slot_mapping == nullptr || p.token_to_req == nullptr)
    return absl::InvalidArgumentError(
        "FusedSuiteParams: query_start_loc, seq_lens, slot_mapping and token_to_req must be non-null");
  if (p.num_tokens < 0 || p.num_tokens > p.capacity || p.num_decode_tokens < 0 ||
      p.num_decode_tokens > p.num_tokens || p.num_decodes < 0 || p.num_decodes > p.num_reqs ||
      p.num_decodes > p.capacity)
    return absl::OutOfRangeError(absl::StrFormat(
        "FusedSuiteParams: need 0 <= N_d=%d <= N=%d <= capacity=%d and 0 <= num_decodes=%d <= min(R=%d, capacity)",
        p.num_decode_tokens, p.num_tokens, p.capacity, p.num_decodes, p.num_reqs));
  DS_RETURN_IF_ERROR(CanImplementSwa(p.swa));
  DS_RETURN_IF_ERROR(CanImplementCompressedSlots(p.mla[0]));
  DS_RETURN_IF_ERROR(CanImplementCompressedSlots(p.mla[1]));
  DS_RETURN_IF_ERROR(CanImplementRingSlots(p.ring));
  DS_RETURN_IF_ERROR(CanImplementIndexerDecode(p.indexer[0]));
  DS_RETURN_IF_ERROR(CanImplementIndexerDecode(p.indexer[1]));
  DS_RETURN_IF_ERROR(CanImplementPrefillSegments(p.seg, p.capacity));
  if (p.swa.token_to_req != nullptr || p.mla[0].token_to_req != nullptr || p.mla[1].token_to_req != nullptr ||
      p.ring.token_to_req != nullptr)
    return absl::InvalidArgumentError("FusedSuiteParams: the builders must search the boundaries (token_to_req null)");
  if (p.swa.num_tokens != p.num_tokens || p.mla[0].capacity != p.capacity || p.mla[1].capacity != p.capacity ||
      p.ring.capacity != p.capacity || p.indexer[0].capacity != p.capacity || p.indexer[1].capacity != p.capacity ||
      p.indexer[0].num_decode_tokens != p.num_decode_tokens || p.indexer[1].num_decode_tokens != p.num_decode_tokens)
    return absl::InvalidArgumentError("FusedSuiteParams: builder sizes disagree with the suite sizes");
  if (p.token_blocks != CeilDiv(MaxI(p.num_tokens, p.num_decodes), FusedSuiteKernel::kTokensPerBlock))
    return absl::InvalidArgumentError("FusedSuiteParams: grid not planned (call PlanFusedSuiteGrid)");
  return absl::OkStatus();
}

#if defined(__CUDACC__)
inline cudaError_t LaunchFusedSuite(const FusedSuiteParams& p, cudaStream_t stream) {
  return LaunchFunctor(FusedSuiteKernel{p}, FusedSuiteKernel::Shape(p), stream);
}
#endif

inline void EmulateFusedSuite(const FusedSuiteParams& p) { EmulateGrid(FusedSuiteKernel{p}, FusedSuiteKernel::Shape(p)); }

}  // namespace dspark
