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
// for prefill rows (docs/states.md s.4); here every block plans them again from the DEVICE
// view, with the same greedy step (NextPrefillGroup, kernels/indexer_prefill.cuh), so the kernel
// reads no host state and a replayed graph follows seq_lens rewritten on the device.
//
// Block i of the job owns prefill request i (request nd + i), for both ratios:
//   phase 0  the boundaries and sequence lengths into shared memory (the kernel's LoadBoundaries);
//   then     the block's 256 threads form the greedy plan together and find where its cells go
//            (PrefillChunkPlace, kernels/suite/fused_suite_prefill_plan.cuh): O(n log n) work,
//            PrefillPlanRounds(n) + 6 barrier phases over shared memory; thread 64 writes its gather
//            length in the first;
//   last     the block's threads write its cells of every chunk it is in.
// The plan needs the boundaries in shared memory (R <= kSharedQslCap) and a workspace of at most
// INT32_MAX, and runs past kPrefillWalkMax prefill requests (host-known: PrefillJobPhases picks the
// mode). Otherwise thread 0 walks the plan up to request i at ratio 1 and thread 32 at ratio 2
// (PlacePrefillRequest, O(i) dependent steps; over global memory past kSharedQslCap), in phase 1,
// and phase 2 writes: the job's three phases of before, kept for the seed's steps (at most 16
// prefills; one beside the decodes in the mixed case), where the walk is short and the plan's
// PrefillPlanRounds(n) + 6 phases would be longer. Where the two cross on an H200 is not
// measured. A block's stores are its own request's cells, so a very long prefill (tens of
// thousands of KV rows) is one block's loop. The CPU path (PrefillJobCpu) walks the plan once
// for all blocks.
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
#include <type_traits>

#include "kernels/common/hd.h"
#include "kernels/indexer_prefill.cuh"
#include "kernels/suite/fused_suite_params.h"
#include "kernels/suite/fused_suite_prefill_plan.cuh"
#include "kernels/swa.cuh"

namespace dspark {

// The plan walked from request 0 to `own` (< n): the groups before own's, each kept chunk
// advancing the three tensors' ends as build_prefill_chunk_metadata's outputs are concatenated.
DS_HD_INLINE PrefillChunkPlace PlacePrefillRequest(const PrefillDeviceSizes& sz, int32_t n, int32_t own,
                                                   int64_t workspace, int64_t max_logits) {
  PrefillChunkPlace at{};
  DS_NO_UNROLL
  for (int32_t first = 0; first < n;) {
    const PrefillGroup g = NextPrefillGroup(sz, first, n, workspace, max_logits);
    const int64_t chunks = PrefillGroupChunks(g, max_logits);
    if (own < g.end) {
      at.first = first;
      at.last = g.end - 1;
      at.chunks = chunks;
      at.group_rows = g.rows;
      break;
    }
    const PrefillGroupExtent e = PrefillGroupExtentOf(g, first, chunks);
    at.cu_at += e.cu;
    at.rows_at += e.rows;
    at.query_at += e.query;
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

// The job's phases for a block: the load, the plan's and the write; or the load, the walk and the write.
inline constexpr int32_t kPrefillWalkMax = 16;  // [prefill requests] the most the walk places alone
DS_HD_INLINE bool PrefillPlannedInBlock(const FusedSuiteParams& p, const FusedSuitePrefillParams& q) {
  return p.num_reqs <= kSharedQslCap && q.workspace <= INT32_MAX &&
         p.num_reqs - p.num_decodes > kPrefillWalkMax;
}
inline constexpr int kPrefillWalkPhases = 3;  // the load, the walk, the write
DS_HD_INLINE int PrefillJobPhases(const FusedSuiteParams& p, const FusedSuitePrefillParams& q) {
  return PrefillPlannedInBlock(p, q) ? 2 + kPrefillPlanSteps + PrefillPlanRounds(p.num_reqs - p.num_decodes)
                                     : kPrefillWalkPhases;
}
inline constexpr int kPrefillJobMaxPhases = 2 + kPrefillPlanSteps + kPrefillPlanMaxRounds;

// Phases 1 .. PrefillJobPhases - 1 of the job's block for prefill request `own` (phase 0 is the
// kernel's boundary load), on `thread` of kPrefillPlanThreads; `qsl` / `seq_lens` are where the
// block reads them. `Shared` is PrefillJobShared, or PrefillWalkShared in the walk variant, which
// runs only where the plan does not (!PrefillPlannedInBlock) and holds none of its code.
template <class Shared>
DS_HD_INLINE void PrefillJobPhase(const FusedSuiteParams& p, const FusedSuitePrefillParams& q, int phase, int32_t own,
                                  int32_t thread, const int32_t* qsl, const int32_t* seq_lens, Shared& s) {
  constexpr bool kCanPlan = std::is_same_v<Shared, PrefillJobShared>;
  const int32_t n = p.num_reqs - p.num_decodes;
  const bool planned = kCanPlan && PrefillPlannedInBlock(p, q);
  const int last = (kCanPlan ? PrefillJobPhases(p, q) : kPrefillWalkPhases) - 1;
  if (phase == 1 && thread == 64) {
    const int32_t r = p.num_decodes + own;
    q.swa_gather_lens[own] = SwaPrefillGatherLen(qsl[r + 1] - qsl[r], seq_lens[r], p.window);
  }
  const PrefillPlanBlock plan{qsl, seq_lens, p.num_decodes, n, q.workspace, q.max_logits};
  if (phase < last) {
    if constexpr (kCanPlan) {
      if (planned) plan.Phase(phase - 1, own, thread, s);
    }
    // The walk: the plan's mode when the sizes break its monotone test (its last step's phase).
    bool walk = !planned;
    if constexpr (kCanPlan) walk = walk || (phase == last - 1 && s.planned == 0);
    if (phase == last - 1 && walk)
      DS_NO_UNROLL
      for (int k = 0; k < 2; ++k)
        if (thread == 32 * k)
          s.place[k] = PlacePrefillRequest(PrefillDeviceSizes{qsl, seq_lens, p.num_decodes, k + 1}, n, own,
                                           q.workspace, q.max_logits);
    return;
  }
  bool from_plan = false;  // the plan holds
  if constexpr (kCanPlan) from_plan = planned && s.planned != 0;
  const auto place = [&](int k) -> PrefillChunkPlace {
    if constexpr (kCanPlan) {
      if (from_plan) return plan.Place(s, k, own);
    }
    return s.place[k];
  };
  DS_NO_UNROLL
  for (int k = 0; k < 2; ++k)
    WritePrefillChunkCells(p, q, PrefillDeviceSizes{qsl, seq_lens, p.num_decodes, k + 1}, k, own, place(k), thread,
                           kPrefillPlanThreads);
}

// The job on the CPU, every block's cells: the plan walked once per ratio, in step with the
// requests (O(n) plan steps in all), each request's cells written in its block's order.
inline void PrefillJobCpu(const FusedSuiteParams& p, const FusedSuitePrefillParams& q, const int32_t* qsl,
                          const int32_t* seq_lens) {
  struct Cursor {
    PrefillChunkPlace at{};
    int32_t end = 0;              // [prefill requests] the group's end
    PrefillGroupExtent extent{};  // what its kept chunks add
  };
  const int32_t n = p.num_reqs - p.num_decodes;
  Cursor cursor[2];
  for (int32_t own = 0; own < n; ++own) {
    const int32_t r = p.num_decodes + own;
    q.swa_gather_lens[own] = SwaPrefillGatherLen(qsl[r + 1] - qsl[r], seq_lens[r], p.window);
    for (int k = 0; k < 2; ++k) {
      const PrefillDeviceSizes sz{qsl, seq_lens, p.num_decodes, k + 1};
      Cursor& c = cursor[k];
      PrefillChunkPlace& at = c.at;
      if (own < c.end) {  // as PlacePrefillRequest's sums over the group's requests before own
        at.row_in_group += static_cast<int32_t>(sz.Rows(own - 1));
        at.query_in_group += static_cast<int32_t>(sz.Query(own - 1));
      } else {  // the next group, past the one before as PlacePrefillRequest advances
        at.cu_at += c.extent.cu;
        at.rows_at += c.extent.rows;
        at.query_at += c.extent.query;
        const PrefillGroup g = NextPrefillGroup(sz, own, n, q.workspace, q.max_logits);
        at.first = own;
        at.last = g.end - 1;
        at.row_in_group = 0;
        at.query_in_group = 0;
        at.chunks = PrefillGroupChunks(g, q.max_logits);
        at.group_rows = g.rows;
        c.end = g.end;
        c.extent = PrefillGroupExtentOf(g, own, at.chunks);
      }
    }
    for (int k = 0; k < 2; ++k)
      WritePrefillChunkCells(p, q, PrefillDeviceSizes{qsl, seq_lens, p.num_decodes, k + 1}, k, own, cursor[k].at, 0, 1);
  }
}

}  // namespace dspark
