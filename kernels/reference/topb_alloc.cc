#include "kernels/reference/topb_alloc.h"

#include <algorithm>
#include <tuple>

namespace dspark::ref {

TopBAllocation TopBAlloc(const std::vector<float>& scores, const std::vector<int32_t>& max_drafts,
                         int32_t max_k, int32_t budget, int32_t base_tokens,
                         const std::vector<int32_t>& tail_offsets, int32_t num_logit_reqs,
                         int32_t num_bonus) {
  const int32_t num_decodes = static_cast<int32_t>(max_drafts.size());
  struct Slot {
    float score;
    int32_t request;
    int32_t position;
  };
  std::vector<Slot> slots;
  for (int32_t r = 0; r < num_decodes; ++r)
    for (int32_t k = 0; k < max_drafts[r]; ++k) slots.push_back({scores[r * max_k + k], r, k});
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) {
    if (a.score != b.score) return a.score > b.score;
    return std::tie(a.request, a.position) < std::tie(b.request, b.position);
  });

  TopBAllocation out;
  out.kept.assign(num_decodes, 0);
  const size_t keep = std::min(slots.size(), static_cast<size_t>(std::max(budget, 0)));
  for (size_t i = 0; i < keep; ++i) ++out.kept[slots[i].request];

  // query_start_loc[1 : nd + 1] = cumsum(kept + base); the rest follows the host-known tail.
  out.query_start_loc.push_back(0);
  for (int32_t r = 0; r < num_decodes; ++r)
    out.query_start_loc.push_back(out.query_start_loc.back() + out.kept[r] + base_tokens);
  const int32_t decode_total = out.query_start_loc.back();
  for (int32_t offset : tail_offsets) out.query_start_loc.push_back(decode_total + offset);
  if (num_logit_reqs > 0) {
    out.cu_num_logits.push_back(0);
    for (int32_t r = 0; r < num_logit_reqs; ++r)
      out.cu_num_logits.push_back(out.cu_num_logits.back() + num_bonus + (r < num_decodes ? out.kept[r] : 0));
  }
  return out;
}

}  // namespace dspark::ref
