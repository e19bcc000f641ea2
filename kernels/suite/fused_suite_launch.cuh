// fused-suite's host side (the kernel is kernels/suite/fused_suite.cuh): the grid plan from
// host-known sizes, the launcher's contract, and the launch of the variant a step needs.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/common/grid.h"
#include "kernels/common/status_macros.h"
#include "kernels/suite/fused_suite.cuh"
#include "kernels/suite/fused_suite_params.h"

namespace dspark {

// Fills the grid partition of `p` from its sizes (host-known values only).
inline void PlanFusedSuiteGrid(FusedSuiteParams& p) {
  using K = FusedSuiteKernel;
  p.token_blocks = CeilDiv(MaxI(p.num_tokens, p.num_reqs), K::kTokensPerBlock);
  p.slot_chunks = CeilDiv(p.num_tokens, K::kThreads);
  p.slot_blocks = K::kSlotJobs * p.slot_chunks;
  p.row_chunks = CeilDiv(p.bt_width, K::kRowChunk);
  p.row_blocks = p.num_decode_tokens * p.row_chunks;
  p.seg_bound = MinI(PrefillSegmentBound(p.num_reqs - p.num_decodes, p.num_tokens, p.segment_len), p.max_segments);
  const int32_t tail =
      MaxI(MaxI(p.capacity - p.num_decode_tokens, p.capacity - p.num_tokens), p.max_segments - p.seg_bound);
  p.tail_blocks = CeilDiv(MaxI(tail, 0), K::kTailChunk);
  p.prefill_blocks = MaxI(p.num_reqs - p.num_decodes, 0);
}

// The launcher's contract: every builder's own contract on its view of the suite, plus the
// suite's size relations and a planned grid.
inline absl::Status CanImplementFusedSuite(const FusedSuiteParams& p, const FusedSuitePrefillParams& pf) {
  if (p.query_start_loc == nullptr || p.seq_lens == nullptr || p.slot_mapping == nullptr || p.token_to_req == nullptr ||
      p.r2_slots == nullptr || p.r2_csl == nullptr)
    return absl::InvalidArgumentError(
        "FusedSuiteParams: query_start_loc, seq_lens, slot_mapping, token_to_req, r2_slots and r2_csl must be non-null");
  if (p.num_tokens < 0 || p.num_tokens > p.capacity || p.num_decode_tokens < 0 ||
      p.num_decode_tokens > p.num_tokens || p.num_decodes < 0 || p.num_decodes > p.num_reqs ||
      p.num_decodes > p.capacity)
    return absl::OutOfRangeError(absl::StrFormat(
        "FusedSuiteParams: need 0 <= N_d=%d <= N=%d <= capacity=%d and 0 <= num_decodes=%d <= min(R=%d, capacity)",
        p.num_decode_tokens, p.num_tokens, p.capacity, p.num_decodes, p.num_reqs));
  DS_RETURN_IF_ERROR(CanImplementSwa(SuiteSwaParams(p, p.seq_lens)));
  if (p.swa_noncausal_width < 0 || (p.swa_noncausal_width > 0 && p.swa_indices_nc == nullptr))
    return absl::InvalidArgumentError("FusedSuiteParams: non-causal SWA rows need swa_indices_nc");
  for (int32_t k = 0; k < 2; ++k) {
    DS_RETURN_IF_ERROR(CanImplementCompressedSlots(SuiteMlaParams(p, k, p.seq_lens)));
    DS_RETURN_IF_ERROR(CanImplementIndexerDecode(SuiteIndexerParams(p, k, p.seq_lens)));
  }
  DS_RETURN_IF_ERROR(CanImplementRingSlots(SuiteRingParams(p, p.seq_lens)));
  DS_RETURN_IF_ERROR(CanImplementPrefillSegments(SuiteSegmentParams(p, p.max_segments), p.capacity));
  if (p.num_reqs > p.num_decodes) {
    if (pf.swa_gather_lens == nullptr || pf.cu[0] == nullptr || pf.cu[1] == nullptr || pf.token_to_seq[0] == nullptr ||
        pf.token_to_seq[1] == nullptr || pf.ks[0] == nullptr || pf.ks[1] == nullptr || pf.ke[0] == nullptr ||
        pf.ke[1] == nullptr)
      return absl::InvalidArgumentError("FusedSuitePrefillParams: a step with prefills needs every prefill output buffer");
    if (pf.cu_len < 0 || pf.rows < 0)
      return absl::InvalidArgumentError(
          absl::StrFormat("FusedSuitePrefillParams: cu_len=%d and rows=%d must be >= 0", pf.cu_len, pf.rows));
  }
  FusedSuiteParams planned = p;
  PlanFusedSuiteGrid(planned);
  if (planned.token_blocks != p.token_blocks || planned.slot_blocks != p.slot_blocks ||
      planned.row_blocks != p.row_blocks || planned.tail_blocks != p.tail_blocks || planned.seg_bound != p.seg_bound ||
      planned.prefill_blocks != p.prefill_blocks)
    return absl::InvalidArgumentError("FusedSuiteParams: grid not planned (call PlanFusedSuiteGrid)");
  return absl::OkStatus();
}

// Launches the variant the step needs (one launch either way): `launch(kernel, shape)`.
template <class LaunchFn>
auto LaunchFusedSuiteWith(const FusedSuiteParams& p, const FusedSuitePrefillParams& pf, const LaunchFn& launch) {
  if (p.prefill_blocks > 0 && PrefillPlannedInBlock(p, pf)) {
    const FusedSuitePrefillKernel k{{pf}, p};
    return launch(k, FusedSuitePrefillKernel::Shape(p));
  }
  if (p.prefill_blocks > 0) {
    const FusedSuitePrefillWalkKernel k{{pf}, p};
    return launch(k, FusedSuitePrefillWalkKernel::Shape(p));
  }
  const FusedSuiteKernel k{{}, p};
  return launch(k, FusedSuiteKernel::Shape(p));
}

}  // namespace dspark
