// CPU truth for the adaptive-verification draft allocation, written from docs/design.md section 3
// (and section 6 for the tie order), not from kernels/topb_alloc.cuh: list every eligible
// (request, position) slot, sort by (score descending, request id, position), keep the first
// B, count per request, and lay the boundaries out.
#pragma once

#include <cstdint>
#include <vector>

namespace dspark::ref {

struct TopBAllocation {
  std::vector<int32_t> kept;             // [num_decodes] kept drafts per request
  std::vector<int32_t> query_start_loc;  // [num_reqs + 1]
  std::vector<int32_t> cu_num_logits;    // [num_logit_reqs + 1]; empty when num_logit_reqs == 0
};

// scores: [num_decodes, max_k] row-major; max_drafts: [num_decodes]; tail_offsets:
// [num_reqs - num_decodes] cumulative query lengths of the requests after the decodes.
// num_logit_reqs > 0 also lays out cu_num_logits = [0, cumsum(kept + num_bonus)] over the
// first num_logit_reqs requests (the ones after the decodes keep no drafts).
TopBAllocation TopBAlloc(const std::vector<float>& scores, const std::vector<int32_t>& max_drafts,
                         int32_t max_k, int32_t budget, int32_t base_tokens,
                         const std::vector<int32_t>& tail_offsets, int32_t num_logit_reqs = 0,
                         int32_t num_bonus = 1);

}  // namespace dspark::ref
