// fused-suite: the whole builder suite of one step in ONE launch (this project's own step past
// PR #56562). It writes exactly the cells that the `fused` implementation's eight launches write
// (kernels/suite/suite.h lists them), reads only device boundaries, and chooses its grid from
// host-known sizes only (N, N_d, num_decodes, capacity, R, the buffer lengths), so a captured
// graph replayed after the device rewrote query_start_loc or seq_lens builds the new metadata.
//
// The per-item work is the builders' own DS_HD functions (SwaResolveRow / SwaWriteRow,
// CompressedSlotOfStoredToken, RingSlotOfToken, IndexerWriteTokenScalars / IndexerWritePerReq,
// PrefillSegmentsPhase); this file decides who does what, when, and copies the indexer
// block-table rows itself (see "row blocks").
//
// Grid: 1 + token_blocks + slot_blocks + row_blocks + tail_blocks + prefill_blocks blocks of 256
// threads, roles by block index:
//   block 0        the prefill segmentation (PrefillSegmentsPhase, 10 barrier phases; one pass
//                  without loads, PrefillSegmentsWithoutPrefills, when R == nd, which the host
//                  knows), for segment indices [0, seg_bound]: seg_bound =
//                  PrefillSegmentBound(R - nd, N, S) bounds the count whenever qsl[R] <= N, so the
//                  block's share does not grow with the persistent buffer.
//   token blocks   kTokensPerBlock = 2 tokens each, 128 lanes per token: the SWA row, one cell
//                  per lane (no lane waits on a second load; a 192-wide non-causal draft row
//                  gives lanes 0-63 a second cell), and the outputs that need no global
//                  load, each on a lane of another warp so that no warp runs two of these
//                  branches one after the other: token_to_req[t] (lane 32), the indexer scalars
//                  per ratio (lanes 64, 96), per_req[t] of both ratios for t < num_decodes
//                  (lane 33), the indexer's ratio-2 compressed_seq_lens[t] = seq_lens[t] // 2
//                  for t < R (lane 65).
//   slot blocks    one job per block, one token per thread: MLA r1, MLA r2, ring, or the
//                  indexer's ratio-2 compressed slots (slot_mapping not read) for 256 tokens. A job per block keeps every warp on one path: single-lane jobs beside
//                  the SWA cells would make a warp wait out one cold round trip per divergent
//                  branch, one after the other (measured: +1.5 us at batch-16 decode). The
//                  slot_mapping entry is loaded with the boundaries in phase 0
//                  (CompressedSlotOfStoredToken then needs no re-read).
//   row blocks     the indexer block-table rows: block (t, c) copies columns
//                  [c * kRowChunk, (c + 1) * kRowChunk) of decode token t's row into BOTH ratios'
//                  bt_out (same inputs: one load, two stores). Each thread issues its
//                  kColsPerThread loads before any store: a loop of load-then-store would wait one
//                  DRAM round trip per iteration, because the compiler must assume the store may
//                  alias the next load (the reason this is not IndexerCopyTokenRow, whose results
//                  it reproduces exactly).
//   tail blocks    kTailChunk entries of every tail region each, one per thread, stores only
//                  (plus, with prefills, one load of qsl[R] for the segment starts): seq_out[N_d, C) = 0 (both ratios), the four
//                  int64 slot buffers [N, C) = -1, seg_seq_lens[seg_bound, max_segments) = 0,
//                  seg_qsl[seg_bound + 1, max_segments] = qsl[R] - qsl[nd].
//   prefill blocks one per prefill request, R - nd of them: SWA's prefill gather lengths and both
//                  indexers' prefill chunks, the plan formed by each block
//                  (kernels/suite/fused_suite_prefill.cuh). They exist only in the kernel's
//                  prefill variants, which the launcher picks when the step has prefill requests
//                  (R > nd, which the host knows): FusedSuitePrefillWalkKernel when the blocks
//                  walk the plan alone (!PrefillPlannedInBlock: at most kPrefillWalkMax prefill
//                  requests, the seed's steps; host-known too), without the in-block plan's code,
//                  registers and 29 KB of shared memory; FusedSuitePrefillKernel when they plan
//                  in the block. A step without prefills launches FusedSuiteKernel, whose code has
//                  none of the job: not even a branch to it (an inlined job moved the decode
//                  blocks' code apart; an out-of-line one made every block copy the parameters to
//                  the stack).
// Token, slot and row blocks load qsl (and seq_lens where they need them) into shared memory in
// phase 0 with one independent load per lane, so one DRAM round trip covers them; phase 1
// searches there (broadcast reads).
//
// Every output cell is at most two dependent DRAM round trips from the launch: the boundaries
// (and seq_lens, slot_mapping) in phase 0, then the block-table cells a token's request selects.
// Code size is time. After the L2 flush a launch fetches every instruction it runs from memory,
// and each jump into code not yet fetched waits for it (an H200 probe: 16 forward jumps over
// 1.5 KB each cost 1.3 us). So runtime-trip loops are not unrolled (DS_NO_UNROLL), block 0 runs
// its phases in one rolled loop (PhasesOf), and no warp runs two scalar branches in a row. That
// took the kernel's code from 47 KB to 23 KB and batch-16 decode from 6.5 to 5.8 us in a probe
// whose empty-kernel floor was 2.9-3.2 us (events, cold L2, graph replay; bench has the figures).
// Tried and dropped, by measurement on an H200 (cold L2, batch-16 decode): an L2 prefetch of the
// block table issued at launch (no gain), and loading a guessed request's block-table row into
// shared memory in phase 0 to skip the second round trip when the guess is right (slower: the
// larger shared footprint and registers cost more than the round trip saved).
//
// The kernel parameters are kept compact (five 64-byte lines, what phase 0 reads in the first)
// and the builders' parameter structs are assembled from them in registers: with a cold cache
// every distinct parameter line a block touches is one more memory round trip.
//
// Token blocks cover max(N, R) items, so per_req and compressed_seq_lens get a writer even when
// zero-length requests outnumber the tokens. With more than kSharedQslCap requests the
// boundaries and sequence lengths are read from global memory instead.
//
// Preconditions on device data (not checkable without a sync), those of the builders:
// qsl non-decreasing, qsl[R] <= N, qsl[nd] <= N_d, block_table covering every position.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/batch.h"
#include "kernels/common/clean_pages.h"
#include "kernels/common/grid.h"
#include "kernels/common/hd.h"
#include "kernels/compressed_slots.cuh"
#include "kernels/indexer_decode.cuh"
#include "kernels/prefill_segments.cuh"
#include "kernels/ring_slots.cuh"
#include "kernels/suite/fused_suite_params.h"
#include "kernels/suite/fused_suite_prefill.cuh"
#include "kernels/swa.cuh"
#include "kernels/token_map.cuh"

namespace dspark {

// FusedSuiteParams and the builders' views of it: kernels/suite/fused_suite_params.h. The grid
// plan, the contract and the launchers: kernels/suite/fused_suite_launch.cuh.

// The kernel's variants: a step without prefill requests; one whose prefill blocks place their
// chunks by the walk alone (!PrefillPlannedInBlock, host-known: at most kPrefillWalkMax prefill
// requests, or past the plan's bounds), without the plan's code, registers and shared memory; and
// one whose blocks plan in the block (falling back to the walk on sizes off the plan's test).
enum class FusedSuiteMode : int { kDecode, kPrefillWalk, kPrefillPlan };

// The prefill variants' second parameter block; empty (no bytes, as an empty base) otherwise.
template <FusedSuiteMode kMode>
struct FusedSuitePrefillPart {
  FusedSuitePrefillParams pf;
};
template <>
struct FusedSuitePrefillPart<FusedSuiteMode::kDecode> {};

template <FusedSuiteMode kMode>
struct FusedSuiteKernelOf : FusedSuitePrefillPart<kMode> {
  static constexpr bool kWithPrefillJob = kMode != FusedSuiteMode::kDecode;
  static constexpr bool kPlansInBlock = kMode == FusedSuiteMode::kPrefillPlan;
  static constexpr int32_t kThreads = 256;
  static constexpr int32_t kLanesPerToken = 128;
  static constexpr int32_t kTokensPerBlock = kThreads / kLanesPerToken;
  static constexpr int32_t kColsPerThread = 4;
  static constexpr int32_t kRowChunk = kThreads * kColsPerThread;  // [columns] per row block
  static constexpr int32_t kTailChunk = 256;  // [entries] of each tail region per tail block: one per thread
  static constexpr int kPhases = kPlansInBlock ? kPrefillJobMaxPhases : kPrefillSegmentPhases;
  static_assert(kPrefillSegmentPhases >= kPrefillWalkPhases, "the walk's phases fit the segmentation's");
  static_assert(kThreads == kPrefillSegmentThreads && kPrefillJobMaxPhases >= kPrefillSegmentPhases,
                "block 0 runs the segmentation with every thread");
  static_assert(kThreads == kPrefillPlanThreads && kThreads > 64, "a prefill block plans with every thread");
  static constexpr int32_t kSlotJobs = 4;
  static_assert(kLanesPerToken >= 97, "lanes 32, 33, 64, 65, 96 of a token carry the scalar outputs");

  struct TokenShared {
    int32_t qsl[kSharedQslCap + 1];
    int32_t seq_lens[kSharedQslCap];
    union {
      int64_t slot[kThreads];  // slot_mapping of the block's tokens (slot blocks: one per thread;
                               //   token blocks: one per token), loaded in phase 0
      // prefill blocks: their plan and places (the walk's places alone in the walk variant)
      std::conditional_t<kPlansInBlock, PrefillJobShared, std::conditional_t<kWithPrefillJob, PrefillWalkShared, NoShared>> pj;
    };
  };
  struct Shared {
    union {
      TokenShared tok;
      PrefillSegmentShared seg;
    } u;
  };

  FusedSuiteParams p;

  static LaunchShape Shape(const FusedSuiteParams& p) {
    return {1 + p.token_blocks + p.slot_blocks + p.row_blocks + p.tail_blocks + (kWithPrefillJob ? p.prefill_blocks : 0),
            kThreads};
  }

  // Block 0 runs the segmentation's phases; the tail blocks store only (phase 0); the prefill
  // blocks load, plan and write (PrefillJobPhases); the others load in phase 0 and write in
  // phase 1.
  DS_HD int PhasesOf(int32_t block) const {
    if (block == 0) return HasPrefills() ? kPrefillSegmentPhases : 1;
    if constexpr (kWithPrefillJob) {
      const int32_t b = block - 1 - (p.token_blocks + p.slot_blocks + p.row_blocks);
      return b < 0 ? 2 : b < p.tail_blocks ? 1 : kPlansInBlock ? PrefillJobPhases(p, this->pf) : kPrefillWalkPhases;
    } else {
      return block - 1 < p.token_blocks + p.slot_blocks + p.row_blocks ? 2 : 1;
    }
  }

  DS_HD void Phase(int phase, const ThreadCtx& c, Shared& s) const {
    if (c.block == 0) {
      // The tail blocks write the segment entries past seg_bound.
      if (HasPrefills())
        PrefillSegmentsPhase(SuiteSegmentParams(p, p.seg_bound), phase, c.thread, s.u.seg);
      else if (phase == 0)
        PrefillSegmentsWithoutPrefills(SuiteSegmentParams(p, p.seg_bound), c.thread, kThreads);
      return;
    }
    int32_t b = c.block - 1;
    if (b < p.token_blocks) {
      if (phase == 0) {
        LoadBoundaries(p.num_reqs, /*with_seq_lens=*/true, c.thread, s.u.tok);
        if (c.thread % kLanesPerToken == 0)
          s.u.tok.slot[c.thread / kLanesPerToken] = SlotOf(b * kTokensPerBlock + c.thread / kLanesPerToken);
      }
      if (phase == 1) WriteTokenBlock(b, c.thread, s.u.tok);
      return;
    }
    b -= p.token_blocks;
    if (b < p.slot_blocks) {
      const int32_t job = b / p.slot_chunks;
      const int32_t t = (b % p.slot_chunks) * kThreads + c.thread;
      if (phase == 0) {
        LoadBoundaries(p.num_reqs, /*with_seq_lens=*/true, c.thread, s.u.tok);
        if (job < 2) s.u.tok.slot[c.thread] = SlotOf(t);
      }
      if (phase == 1) WriteSlot(job, t, job < 2 ? s.u.tok.slot[c.thread] : int64_t{-1}, s.u.tok);
      return;
    }
    b -= p.slot_blocks;
    if (b < p.row_blocks) {
      if (phase == 0) LoadBoundaries(p.num_decodes, /*with_seq_lens=*/false, c.thread, s.u.tok);
      if (phase == 1) CopyRowChunk(b / p.row_chunks, b % p.row_chunks, c.thread, s.u.tok);
      return;
    }
    if constexpr (kWithPrefillJob) {
      if (b - p.row_blocks >= p.tail_blocks) {
        PrefillBlockPhase(phase, b - p.row_blocks - p.tail_blocks, c.thread, s.u.tok);
        return;
      }
    }
    if (phase == 0) WriteTail(b - p.row_blocks, c.thread, kThreads);
  }

  // Prefill block `own` (prefill request nd + own): the boundaries in phase 0, then the job's
  // phases (PrefillJobPhase).
  DS_HD void PrefillBlockPhase(int phase, int32_t own, int32_t thread, TokenShared& s) const {
    if (phase == 0) {
      LoadBoundaries(p.num_reqs, /*with_seq_lens=*/true, thread, s);
      return;
    }
    PrefillJobPhase(p, this->pf, phase, own, thread, CachesBoundaries() ? s.qsl : p.query_start_loc,
                    CachesBoundaries() ? s.seq_lens : p.seq_lens, s.pj);
  }

  DS_HD bool CachesBoundaries() const { return p.num_reqs <= kSharedQslCap; }
  DS_HD bool HasPrefills() const { return p.num_reqs > p.num_decodes; }

  // qsl[0 .. count] (and seq_lens[0 .. R)) into shared memory, when the boundaries are cached.
  DS_HD void LoadBoundaries(int32_t count, bool with_seq_lens, int32_t thread, TokenShared& s) const {
    if (!CachesBoundaries()) return;
    DS_NO_UNROLL
    for (int32_t i = thread; i <= count; i += kThreads) s.qsl[i] = p.query_start_loc[i];
    if (with_seq_lens)
      DS_NO_UNROLL
      for (int32_t i = thread; i < p.num_reqs; i += kThreads) s.seq_lens[i] = p.seq_lens[i];
  }

  DS_HD void WriteTokenBlock(int32_t b, int32_t thread, const TokenShared& s) const {
    WriteToken(b * kTokensPerBlock + thread / kLanesPerToken, s.slot[thread / kLanesPerToken],
               thread % kLanesPerToken, kLanesPerToken, s);
  }

  // Token t's share of `lane` of `lanes`: the SWA cells of its columns; the scalar outputs go to
  // lanes 32, 33, 64, 65, 96 (all to lane 0 when lanes == 1, the CPU path). `slot` is SlotOf(t).
  DS_HD void WriteToken(int32_t t, int64_t slot, int32_t lane, int32_t lanes, const TokenShared& s) const {
    const int32_t* qsl = CachesBoundaries() ? s.qsl : p.query_start_loc;
    const int32_t* seq_lens = CachesBoundaries() ? s.seq_lens : p.seq_lens;
    if (t < p.num_tokens) {
      SwaParams swa = SuiteSwaParams(p, seq_lens);
      if (p.swa_noncausal_width > 0 && t < p.num_decode_tokens) {  // the DSpark draft rows
        swa.swa_indices = p.swa_indices_nc;
        swa.noncausal_width = p.swa_noncausal_width;
      }
      // vLLM's is_valid_token (slot_mapping >= 0), causal and non-causal rows alike, from the
      // slot loaded with the boundaries in phase 0: SwaResolveRow's own check (swa.slot_mapping
      // set) would load it after the barrier, a second round trip before the block table's.
      const SwaRow row = slot < 0 ? SwaInvalidRow(swa) : SwaResolveRow(swa, qsl, t);
      SwaWriteRow(swa, t, row, lane, lanes);
      if (lane == 32 % lanes) p.token_to_req[t] = t < qsl[p.num_reqs] ? FindRequest(qsl, p.num_reqs, t) : 0;
    }
    for (int32_t k = 0; k < 2; ++k) {
      if (t >= p.num_decode_tokens || lane != (64 + 32 * k) % lanes) continue;
      const int32_t actual = qsl[p.num_decodes];
      const bool valid = t < actual;
      const int32_t r = valid ? FindRequest(qsl, p.num_decodes, t) : 0;
      IndexerWriteTokenScalars(SuiteIndexerParams(p, k, seq_lens), t, valid, r, valid ? qsl[r] : 0,
                               valid ? qsl[r + 1] : 0, actual);
    }
    if (t < p.num_decodes && lane == 33 % lanes) {
      IndexerWritePerReq(SuiteIndexerParams(p, 0, seq_lens), qsl, t);
      IndexerWritePerReq(SuiteIndexerParams(p, 1, seq_lens), qsl, t);
    }
    if (t < p.num_reqs && lane == 65 % lanes) p.r2_csl[t] = seq_lens[t] / 2;
  }

  // What a slot block's thread for token t loads in phase 0.
  DS_HD int64_t SlotOf(int32_t t) const { return t < p.num_tokens ? p.slot_mapping[t] : -1; }

  // Slot jobs: 0 = MLA ratio 1, 1 = MLA ratio 2, 2 = compressor ring, 3 = the indexer's ratio 2.
  // `slot`: SlotOf(t) (jobs 0, 1).
  DS_HD void WriteSlot(int32_t job, int32_t t, int64_t slot, const TokenShared& s) const {
    if (t >= p.num_tokens) return;
    const int32_t* qsl = CachesBoundaries() ? s.qsl : p.query_start_loc;
    const int32_t* seq_lens = CachesBoundaries() ? s.seq_lens : p.seq_lens;
    if (job < 2)
      p.mla_out[job][t] =
          slot == -1 ? int64_t{-1} : CompressedSlotOfStoredToken(SuiteMlaParams(p, job, seq_lens), qsl, t);
    else if (job == 3)
      p.r2_slots[t] = CompressedSlotOfStoredToken(SuiteMlaParams(p, 1, seq_lens), qsl, t);
    else
      p.ring_out[t] = RingSlotOfToken(SuiteRingParams(p, seq_lens), qsl, t);
  }

  // CPU path: block 0 as the segmentation's CPU path (PrefillSegmentsCpu); the other roles'
  // items in a loop, with the boundaries loaded once (every block loads the same values): a
  // token by one lane of one, a slot per token, a decode row per ratio by IndexerCopyRowFrom (its
  // request found once), the tails by one lane of one, the prefill blocks by PrefillJobCpu (the
  // plan walked once for all). The roles write disjoint cells, so their order does not matter
  // (tests/kernels/test_cpu_paths.cc).
  void CpuRun(LaunchShape) const {
    PrefillSegmentsCpu(SuiteSegmentParams(p, p.seg_bound));
    Shared smem;
    std::memset(static_cast<void*>(&smem), 0xA5, sizeof(Shared));
    TokenShared& s = smem.u.tok;
    for (int32_t t = 0; t < kThreads; ++t) LoadBoundaries(p.num_reqs, /*with_seq_lens=*/true, t, s);
    for (int32_t t = 0; t < p.token_blocks * kTokensPerBlock; ++t) WriteToken(t, SlotOf(t), 0, 1, s);
    for (int32_t job = 0; job < kSlotJobs; ++job)
      for (int32_t t = 0; t < MinI(p.num_tokens, p.slot_chunks * kThreads); ++t)
        WriteSlot(job, t, job < 2 ? SlotOf(t) : -1, s);
    for (int32_t t = 0; t < p.num_decode_tokens; ++t) {
      // The row blocks' cells (CopyRowChunkOf's are IndexerCopyTokenRow's): each ratio's row by
      // the indexer's CPU copy, one copy per row instead of a call per 4 columns.
      const int32_t r = RowRequest(t, s);
      for (int32_t k = 0; k < 2 && p.row_chunks > 0; ++k) {
        const IndexerDecodeParams ratio = SuiteIndexerParams(p, k, p.seq_lens);
        IndexerCopyRowCpu(ratio, t, IndexerRowSource(ratio, r >= 0, r));
      }
    }
    CpuWriteTails();
    if constexpr (kWithPrefillJob)
      PrefillJobCpu(p, this->pf, CachesBoundaries() ? s.qsl : p.query_start_loc,
                    CachesBoundaries() ? s.seq_lens : p.seq_lens);
  }

  // The request whose block-table row decode token t copies, or -1 for a padding row.
  DS_HD int32_t RowRequest(int32_t t, const TokenShared& s) const {
    const int32_t* qsl = CachesBoundaries() ? s.qsl : p.query_start_loc;
    return t < qsl[p.num_decodes] ? FindRequest(qsl, p.num_decodes, t) : -1;
  }

  DS_HD void CopyRowChunk(int32_t t, int32_t chunk, int32_t thread, const TokenShared& s) const {
    CopyRowChunkOf(t, RowRequest(t, s), chunk, thread);
  }

  // Columns [chunk * kRowChunk, ...) of decode token t's block-table row (request r, or zeros
  // for a padding row, r < 0) into both ratios' bt_out: what IndexerCopyTokenRow writes, with
  // every load of a thread issued before its first store.
  DS_HD void CopyRowChunkOf(int32_t t, int32_t req, int32_t chunk, int32_t thread) const {
    const bool valid = req >= 0;
    const int32_t r = valid ? req : 0;
    const int32_t* src = p.block_table + static_cast<int64_t>(r) * p.bt_stride;
    const int32_t first = chunk * kRowChunk + thread;
    int32_t v[kColsPerThread];
#pragma unroll
    for (int32_t i = 0; i < kColsPerThread; ++i) {
      const int32_t col = first + i * kThreads;
      v[i] = valid && col < p.bt_width ? src[col] : 0;
    }
    int32_t* dst0 = p.bt_out[0] + static_cast<int64_t>(t) * p.out_stride;
    int32_t* dst1 = p.bt_out[1] + static_cast<int64_t>(t) * p.out_stride;
#pragma unroll
    for (int32_t i = 0; i < kColsPerThread; ++i) {
      const int32_t col = first + i * kThreads;
      if (col < p.bt_width) {
        dst0[col] = v[i];
        dst1[col] = v[i];
      }
    }
  }

  // WriteTail's cells of tail blocks [0, tail_blocks), one fill per field (host only).
  void CpuWriteTails() const {
    if (p.tail_blocks <= 0) return;
    const int32_t span = p.tail_blocks * kTailChunk;
    const auto fill = [](auto* out, int32_t begin, int32_t end, auto v) {
      if (begin < end) clean_pages::TailFill(out + begin, out + end, static_cast<std::remove_pointer_t<decltype(out)>>(v));
    };
    const int32_t sb = p.num_decode_tokens, se = MinI(sb + span, p.capacity);
    fill(p.seq_out[0], sb, se, 0);
    fill(p.seq_out[1], sb, se, 0);
    const int32_t tb = p.num_tokens, te = MinI(tb + span, p.capacity);
    fill(p.mla_out[0], tb, te, -1);
    fill(p.mla_out[1], tb, te, -1);
    fill(p.ring_out, tb, te, -1);
    fill(p.r2_slots, tb, te, -1);
    fill(p.seg_seq_lens, p.seg_bound, MinI(p.seg_bound + span, p.max_segments), 0);
    const int32_t qb = p.seg_bound + 1, qe = MinI(qb + span, p.max_segments + 1);
    if (qb < qe)
      fill(p.seg_qsl, qb, qe, HasPrefills() ? p.query_start_loc[p.num_reqs] - p.query_start_loc[p.num_decodes] : 0);
  }

  // Tail block j's entries that `thread` of `threads` owns (every threads-th one).
  DS_HD void WriteTail(int32_t j, int32_t thread, int32_t threads) const {
    const int32_t offset = j * kTailChunk;
    {
      const int32_t begin = p.num_decode_tokens + offset;
      const int32_t end = MinI(begin + kTailChunk, p.capacity);
      DS_NO_UNROLL
      for (int32_t i = begin + thread; i < end; i += threads) {
        p.seq_out[0][i] = 0;
        p.seq_out[1][i] = 0;
      }
    }
    {
      const int32_t begin = p.num_tokens + offset;
      const int32_t end = MinI(begin + kTailChunk, p.capacity);
      DS_NO_UNROLL
      for (int32_t i = begin + thread; i < end; i += threads) {
        p.mla_out[0][i] = -1;
        p.mla_out[1][i] = -1;
        p.ring_out[i] = -1;
        p.r2_slots[i] = -1;
      }
    }
    {
      const int32_t begin = p.seg_bound + offset;
      const int32_t end = MinI(begin + kTailChunk, p.max_segments);
      DS_NO_UNROLL
      for (int32_t k = begin + thread; k < end; k += threads) p.seg_seq_lens[k] = 0;
    }
    {
      const int32_t begin = p.seg_bound + 1 + offset;
      const int32_t end = MinI(begin + kTailChunk, p.max_segments + 1);
      if (begin + thread < end) {
        const int32_t last = HasPrefills() ? p.query_start_loc[p.num_reqs] - p.query_start_loc[p.num_decodes] : 0;
        DS_NO_UNROLL
        for (int32_t k = begin + thread; k < end; k += threads) p.seg_qsl[k] = last;
      }
    }
  }
};

// The kernel of a step without prefill requests, and of one with them (the prefill job's blocks:
// the walk alone, or the plan in the block).
using FusedSuiteKernel = FusedSuiteKernelOf<FusedSuiteMode::kDecode>;
using FusedSuitePrefillWalkKernel = FusedSuiteKernelOf<FusedSuiteMode::kPrefillWalk>;
using FusedSuitePrefillKernel = FusedSuiteKernelOf<FusedSuiteMode::kPrefillPlan>;
static_assert(sizeof(FusedSuiteKernel) == sizeof(FusedSuiteParams), "a step without prefills launches the params alone");

}  // namespace dspark
