// DSpark adaptive verification on the host side of the simulator:
//  - SurvivalScores: S(r, k) = prod_{i<=k} c_i in float32, left to right (the fixed order that
//    kernels/topb_alloc.cuh documents);
//  - TopBAllocator: the simulator's fast path of the device allocation. It must equal
//    EmulateTopBAlloc (the kernel body) and ref::TopBAlloc slot for slot; tests/model/test_sim_adaptive.cc
//    checks that on many random cases with ties, and every materialised step plan re-runs the
//    emulated kernel and compares (StepPlan::Arrays);
//  - ComputeDraftBudget and BuildCostTables: vLLM's host budget from stale confidences and
//    per-padded-size step-cost tables.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "sim/model/score_sort.h"

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

// Radix select: slots are bucketed by bits [16, 28) of their score's float32 pattern, 128
// buckets per octave over the 32 octaves below 2 (a monotone function of a non-negative score;
// smaller scores share bucket 0, larger ones the top bucket), the bucket holding the B-th best
// slot is found from the bucket counts, and only that bucket is ordered exactly (nth_element
// on keys that sort as the kernel's (score desc, request, position) order). O(slots) per call.
class TopBAllocator {
 public:
  explicit TopBAllocator(int32_t max_slots = 0) {
    keys_.reserve(static_cast<size_t>(max_slots));
    boundary_slots_.reserve(static_cast<size_t>(max_slots));
    bucket_.reserve(static_cast<size_t>(max_slots) + kRowPad);
  }

  // scores: [num_decodes, max_k] (>= 0, not NaN); max_drafts: [num_decodes] in [0, max_k].
  // Writes kept[num_decodes] and returns the kept total, min(budget, eligible slots).
  int32_t Allocate(const float* scores, const int32_t* max_drafts, int32_t num_decodes,
                   int32_t max_k, int32_t budget, int32_t* kept);

 private:
  static constexpr int kBuckets = 4096;
  static constexpr int kRowPad = 8;  // buckets past the last slot: a row is read 8 at a time
  std::vector<uint64_t> keys_;    // [slots] the boundary bucket's keys
  std::vector<int32_t> boundary_slots_;  // [slots] the boundary bucket's slots first
  std::vector<int16_t> bucket_;  // [slots + kRowPad] score bucket, -1 for an ineligible slot
  std::array<int32_t, kBuckets + 1> bucket_count_{};  // [1 + bucket], zero between calls
};

// vLLM's step-cost tables (adaptive_verification.py, build_cost_tables_from_curves, the same
// in every release with adaptive verification, 0.28.0-0.34.0): from curves of (size, ms)
// points, draft_ms[r] for r in [0, max_num_reqs] requests and verify_ms[n] for n in
// [0, max_batch_tokens] tokens. Each curve's values become their running max; then
//  - at or below `cudagraph_limit` (the largest capture size; the same limit for both
//    tables) a size costs what the next profiled size costs (a step function: execution pads
//    to the next captured size), the last point's cost past the last point;
//  - above it, np.interp between the points that are themselves above it (flat before the
//    first of them), when there are such points; cudagraph_limit = 0 (no capture sizes) keeps
//    the step function everywhere (vLLM's `if cudagraph_limit:`);
//  - past the last point, linear extrapolation with the slope of the last two points;
//  - finally draft >= 0 and verify >= 1e-6.
// Every operation in float64 as numpy performs it (np.interp's slope * (x - x_j) + y_j).
struct DraftCostTables {
  std::vector<double> draft_ms;   // [max_num_reqs + 1]
  std::vector<double> verify_ms;  // [max_batch_tokens + 1]
};
using CostCurve = std::vector<std::pair<double, double>>;  // (size, ms), sizes ascending
// The curves must be non-empty with strictly ascending sizes (CheckCostCurve says why not).
absl::Status CheckCostCurve(const CostCurve& curve, absl::string_view what);
DraftCostTables BuildCostTables(const CostCurve& draft_curve, const CostCurve& verify_curve,
                                int32_t max_num_reqs, int32_t max_batch_tokens,
                                int32_t cudagraph_limit);

// The sizes vLLM profiles its curves at (AdaptiveVerificationManager.batches_to_profile):
// every capture size, then tail sizes past the largest one L: min(L + L / 2, max_tokens) and
// L doubled until max_tokens (each capped there), less the capture sizes; ascending.
std::vector<int32_t> CostProfileSizes(const std::vector<int32_t>& capture_sizes,
                                      int32_t max_num_batched_tokens);

// The rejection sampler's logits chunk (rejection_sampler.py, get_max_chunk_logits): the
// most logits rows one verification chunk holds, max(1, 2^30 bytes / (vocab * 4 bytes)).
int32_t MaxChunkLogits(int64_t vocab_size);

// One step's inputs to vLLM's host budget (AdaptiveVerificationManager.get_num_tokens).
struct BudgetInputs {
  const float* stale_conf = nullptr;      // [num_decodes, k] the staged (stale) confidences
  const int32_t* valid_drafts = nullptr;  // [num_decodes] drafts scheduled (may be verified)
  int32_t num_decodes = 0;                // requests with drafts (the others have none)
  int32_t k = 0;                          // K: row length of stale_conf
  int32_t num_reqs = 0;                   // all scheduled requests: draft_ms is read there
  int32_t num_sampling = 0;               // requests that sample a token this step
  int32_t non_draft_total = 0;            // [tokens] scheduled tokens that are not drafts
  int32_t max_total_logits = 0x7FFFFFFF;  // MaxChunkLogits(vocab)
  int32_t num_bonus_tokens = 1;           // logits rows per request besides its drafts
};

// The most drafts the budget may keep: min(sum valid, max(0, max_total_logits - num_reqs *
// num_bonus_tokens)) (the verified logits must fit one rejection-sampler chunk).
int32_t MaxDraftBudget(const BudgetInputs& in);

// B = argmax over b in [0, MaxDraftBudget] of (num_sampling + cumsum of the b best scores) /
// (draft_ms[num_reqs] + verify_ms[non_draft_total + b]), the first index on ties. A score is
// the float64 cumulative product of a request's stale confidences at a valid step, sorted in
// descending order; the sum is np.cumsum's (left to right, from 0), num_sampling added after.
// `scratch` is reused between calls.
struct DraftBudgetScratch {
  std::vector<double> scores;  // [sum valid] the survival scores, then sorted
  ScoreSortScratch sort;
};
int32_t ComputeDraftBudget(const BudgetInputs& in, const DraftCostTables& tables,
                           DraftBudgetScratch* scratch);

// vLLM's host split of the budget (compact_batch): the host's per-request draft counts, which
// only the total of matches the device's. drafts[n] are the scheduled drafts of the batch's
// rows (verification rows, those with drafts, first; vLLM's sort_batch_req_ids puts them
// there). B equal to their sum: the drafts as scheduled. Otherwise each of the nv
// verification rows gets B / nv and the first B % nv one more, with no per-request cap (drafts
// [5, 1, 1], B = 6 give [2, 2, 2]); rows without drafts get 0. Writes split[n].
void HostDraftSplit(const int32_t* drafts, int32_t n, int32_t budget, int32_t* split);

}  // namespace dspark::sim
