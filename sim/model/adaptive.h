// DSpark adaptive verification on the host side of the simulator:
//  - SurvivalScores: S(r, k) = prod_{i<=k} c_i in float32, left to right (the fixed order that
//    kernels/topb_alloc.cuh documents);
//  - TopBAllocator: the simulator's fast path of the device allocation. It must equal
//    EmulateTopBAlloc (the kernel body) and ref::TopBAlloc slot for slot; tests/model/test_sim_adaptive.cc
//    checks that on many random cases with ties, and every materialised step plan re-runs the
//    emulated kernel and compares (StepPlan::Arrays);
//  - PickDraftBudget: the host policy that chooses B from (stale) confidences and a step-cost
//    function.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dspark::sim {

// out[k] = prod_{i<=k} conf[i], k < n, accumulated in float32 from position 0 upwards. With
// conf in [0, 1] the result never increases along k.
inline void SurvivalScores(const float* conf, int32_t n, float* out) {
  float s = 1.0f;
  for (int32_t k = 0; k < n; ++k) {
    s *= conf[k];
    out[k] = s;
  }
}

// Radix select: slots are bucketed by the top 12 bits of their score's float32 pattern (a
// monotone function of a non-negative score), the bucket holding the B-th best slot is found
// from the bucket counts, and only that bucket is ordered exactly (nth_element on keys that
// sort as the kernel's (score desc, request, position) order). O(slots) per call.
class TopBAllocator {
 public:
  explicit TopBAllocator(int32_t max_slots = 0) {
    keys_.reserve(static_cast<size_t>(max_slots));
    bucket_.reserve(static_cast<size_t>(max_slots));
  }

  // scores: [num_decodes, max_k] (>= 0, not NaN); max_drafts: [num_decodes] in [0, max_k].
  // Writes kept[num_decodes] and returns the kept total, min(budget, eligible slots).
  int32_t Allocate(const float* scores, const int32_t* max_drafts, int32_t num_decodes,
                   int32_t max_k, int32_t budget, int32_t* kept);

 private:
  std::vector<uint64_t> keys_;
  std::vector<int16_t> bucket_;  // [slots] score bucket, -1 for an ineligible slot
  std::array<int32_t, 2048> bucket_count_{};
};

// Host budget policy. For B in a candidate set (bucket edges of a 64-bin histogram of the
// eligible scores, plus 0), the expected output tokens of the iteration are num_decodes + E(B),
// where E(B) is the sum of the top-B scores (a survival score is the probability that the
// draft is accepted, so the sum is the expected number of accepted drafts; inside a bin it is
// interpolated). The policy picks the B maximising (num_decodes + E(B)) / cost_us(B), ties to
// the smaller B, then grows B while cost_us does not change (CUDA-graph padding tokens are
// free). cost_us(B) must be > 0. A template so the hot path calls the cost inline, without a
// std::function allocation.
template <class CostFn>
int32_t PickDraftBudget(const float* scores, const int32_t* max_drafts, int32_t num_decodes,
                        int32_t max_k, int32_t cap, const CostFn& cost_us) {
  constexpr int kBins = 64;
  std::array<int32_t, kBins> count{};
  std::array<double, kBins> sum{};
  int32_t eligible = 0;
  for (int32_t r = 0; r < num_decodes; ++r)
    for (int32_t k = 0; k < max_drafts[r]; ++k) {
      const float s = std::clamp(scores[r * max_k + k], 0.0f, 1.0f);
      const int bin = std::min(kBins - 1, static_cast<int>(s * kBins));
      ++count[bin];
      sum[bin] += s;
      ++eligible;
    }
  cap = std::clamp(cap, 0, eligible);
  if (cap == 0) return 0;

  // Walking the bins from the top, the best `cumulative` slots are whole bins, so their
  // expected accepted drafts are the running sum; a cap inside a bin takes its share.
  int32_t best_b = 0;
  double best = num_decodes / cost_us(0);
  int32_t cumulative = 0;
  double expected = 0.0;
  for (int bin = kBins - 1; bin >= 0 && cumulative < cap; --bin) {
    if (count[bin] == 0) continue;
    const int32_t take = std::min(count[bin], cap - cumulative);
    cumulative += take;
    expected += sum[bin] * take / count[bin];
    const double value = (num_decodes + expected) / cost_us(cumulative);
    if (value > best) {
      best = value;
      best_b = cumulative;
    }
  }
  const double chosen_cost = cost_us(best_b);
  while (best_b < cap && cost_us(best_b + 1) == chosen_cost) ++best_b;
  return best_b;
}

}  // namespace dspark::sim
