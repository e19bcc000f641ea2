// fused-suite's prefill job (kernels/suite/fused_suite.cuh): the prefill metadata of SWA and of
// both indexers, in blocks of their own that exist only when the step has prefill requests (a
// step without prefills runs none of this code).
//
//   swa_gather_lens[i]   ComputePrefillMetadataKernel's q + min(prefix, W - 1) (SwaPrefillGatherLen)
//   the indexer chunks   per ratio, what DeepseekV32IndexerMetadataBuilder.build's prefill branch
//                        (vLLM's indexer.py, read_file id 61702236028) writes:
//                        split_indexer_prefill_chunks, then per kept chunk
//                        build_prefill_chunk_metadata's cu_seq_lens, token_to_seq and
//                        cu_seqlen_ks / ke, concatenated in plan order like (a)-(d)'s
//                        (kernels/suite/vllm_indexer_ops.h, IndexerPrefill).
//
// vLLM plans the chunks on the host from seq_lens_cpu_upper_bound and qsl_cpu, which are exact
// for prefill rows (VLLM_CODE_MAP.md s.4); here every block plans them again from the DEVICE
// view, with the same greedy step (NextPrefillGroup, kernels/indexer_prefill.cuh), so the kernel
// reads no host state and a replayed graph follows seq_lens rewritten on the device.
//
// Block i of the job owns prefill request i (request nd + i), for both ratios:
//   phase 0  the boundaries and sequence lengths into shared memory (the kernel's LoadBoundaries);
//   phase 1  thread 0 walks the plan up to request i at ratio 1, thread 32 at ratio 2 (two warps,
//            in parallel), giving where its cells go (PrefillChunkPlace); thread 64 writes its
//            gather length;
//   phase 2  the block's threads write its cells of every chunk it is in.
// The walk is O(i) dependent steps over shared memory (global memory past kSharedQslCap
// requests), so the job costs O(P^2) steps over P prefill requests: nothing at the seed's 16,
// a few microseconds at a few hundred. A block's stores are its own request's cells, so a very
// long prefill (tens of thousands of KV rows) is one block's loop.
//
// Where a request's cells go. A group of the plan (requests [first, last]) with KV rows G and
// query tokens m gives `chunks` chunks of that group, each with cu_seq_lens [n + 1] (n requests),
// token_to_seq [G] and ks / ke for its query slice; the slices cover the group's m tokens in
// order, so the group's ks / ke are contiguous and do not depend on the slicing. A group of
// several requests is one chunk (m x G fits the logits budget, so its slice max(1, budget // G)
// >= m); a group of several chunks is one request. So request b's token_to_seq rows of all the
// group's chunks are contiguous too.
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"
#include "kernels/indexer_prefill.cuh"
#include "kernels/suite/fused_suite_params.h"
#include "kernels/swa.cuh"

namespace dspark {

inline constexpr int kPrefillJobPhases = 3;

// The device view of the step's prefill requests [nd, R) as the plan reads them at `ratio`.
struct PrefillDeviceSizes {
  const int32_t* qsl;       // [R + 1] (shared or global)
  const int32_t* seq_lens;  // [R]
  int32_t nd;
  int32_t ratio;
  DS_HD int64_t Rows(int32_t i) const { return seq_lens[nd + i] / ratio; }  // the csl
  DS_HD int64_t Query(int32_t i) const { return int64_t{qsl[nd + i + 1]} - qsl[nd + i]; }
};

// Where prefill request `own`'s cells of one ratio go.
struct PrefillChunkPlace {
  int32_t first, last;     // [prefill requests] its group
  int32_t row_in_group;    // KV rows of the group's requests before it: its ks and cu entry
  int32_t query_in_group;  // query tokens of the group's requests before it
  int64_t chunks;          // chunks of the group kept (0: no KV rows, dropped as vLLM drops them; or no query)
  int64_t group_rows;      // the group's KV rows, each chunk's cu_seq_lens[n]
  int64_t cu_at;           // [entries] where the group's first chunk's cu_seq_lens start
  int64_t rows_at;         // [rows] its token_to_seq (past prefill_rows: not kept)
  int64_t query_at;        // [entries] the group's first ks / ke
};

// The plan walked from request 0 to `own` (< n): the groups before own's, each kept chunk
// advancing the three tensors' ends as build_prefill_chunk_metadata's outputs are concatenated.
DS_HD_INLINE PrefillChunkPlace PlacePrefillRequest(const PrefillDeviceSizes& sz, int32_t n, int32_t own,
                                                   int64_t workspace, int64_t max_logits) {
  PrefillChunkPlace at{};
  DS_NO_UNROLL
  for (int32_t first = 0; first < n;) {
    const PrefillGroup g = NextPrefillGroup(sz, first, n, workspace, max_logits);
    const int64_t chunks = g.rows != 0 && g.m > 0 ? CeilDiv64(g.m, PrefillSliceLen(g, max_logits)) : 0;
    if (own < g.end) {
      at.first = first;
      at.last = g.end - 1;
      at.chunks = chunks;
      at.group_rows = g.rows;
      break;
    }
    at.cu_at += chunks * (g.end - first + 1);
    at.rows_at += chunks * g.rows;
    if (chunks > 0) at.query_at += g.m;
    first = g.end;
  }
  DS_NO_UNROLL
  for (int32_t j = at.first; j < own; ++j) {
    at.row_in_group += static_cast<int32_t>(sz.Rows(j));
    at.query_in_group += static_cast<int32_t>(sz.Query(j));
  }
  return at;
}

// Request `own`'s cells at ratio k + 1 from its place, the ones `thread` of `threads` owns.
// Writes past a buffer's length are dropped (token_to_seq past prefill_rows, as the suite keeps
// it; the others only on device data breaking the preconditions).
DS_HD_INLINE void WritePrefillChunkCells(const FusedSuiteParams& p, const FusedSuitePrefillParams& q,
                                         const PrefillDeviceSizes& sz, int k, int32_t own, const PrefillChunkPlace& at,
                                         int32_t thread, int32_t threads) {
  if (at.chunks == 0) return;
  const int32_t b = own - at.first;  // chunk-relative request, token_to_seq's value
  // cu_seq_lens: own's entry in every chunk of the group; the group's last request also writes
  // each chunk's closing entry, the group's rows.
  const int64_t per_chunk = at.last - at.first + 2;
  const int64_t entries = own == at.last ? 2 * at.chunks : at.chunks;
  DS_NO_UNROLL
  for (int64_t x = thread; x < entries; x += threads) {
    const bool closing = own == at.last && x % 2 == 1;
    const int64_t pos = at.cu_at + (own == at.last ? x / 2 : x) * per_chunk + b + (closing ? 1 : 0);
    if (pos < q.cu_len) q.cu[k][pos] = closing ? static_cast<int32_t>(at.group_rows) : at.row_in_group;
  }
  const int64_t first_row = at.rows_at + at.row_in_group;
  const int64_t rows_end = first_row + at.chunks * sz.Rows(own);
  DS_NO_UNROLL
  for (int64_t r = first_row + thread; r < rows_end && r < q.rows; r += threads) q.token_to_seq[k][r] = b;
  const int32_t len = static_cast<int32_t>(sz.Query(own));
  const int32_t start_pos = sz.seq_lens[sz.nd + own] - len;
  const int64_t first_q = at.query_at + at.query_in_group;
  DS_NO_UNROLL
  for (int32_t o = thread; o < len && first_q + o < p.capacity; o += threads) {
    q.ks[k][first_q + o] = at.row_in_group;
    q.ke[k][first_q + o] = PrefillChunkKe(at.row_in_group, start_pos, o, sz.ratio);
  }
}

// Phases 1 and 2 of the job's block for prefill request `own` (phase 0 is the kernel's boundary
// load); `qsl` / `seq_lens` are where the block reads them, `place` is block-shared [2].
DS_HD_INLINE void PrefillJobPhase(const FusedSuiteParams& p, const FusedSuitePrefillParams& q, int phase, int32_t own,
                                  int32_t thread, int32_t threads, const int32_t* qsl, const int32_t* seq_lens,
                                  PrefillChunkPlace* place) {
  const int32_t n = p.num_reqs - p.num_decodes;
  if (phase == 1) {
    DS_NO_UNROLL
    for (int k = 0; k < 2; ++k)
      if (thread == (32 * k) % threads)
        place[k] = PlacePrefillRequest(PrefillDeviceSizes{qsl, seq_lens, p.num_decodes, k + 1}, n, own,
                                       q.workspace, q.max_logits);
    if (thread == 64 % threads) {
      const int32_t r = p.num_decodes + own;
      q.swa_gather_lens[own] = SwaPrefillGatherLen(qsl[r + 1] - qsl[r], seq_lens[r], p.window);
    }
  } else if (phase == 2) {
    DS_NO_UNROLL
    for (int k = 0; k < 2; ++k)
      WritePrefillChunkCells(p, q, PrefillDeviceSizes{qsl, seq_lens, p.num_decodes, k + 1}, k, own, place[k], thread,
                             threads);
  }
}

}  // namespace dspark
