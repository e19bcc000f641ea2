#include "sim/model/adaptive.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/model/adaptive_simd.h"

namespace dspark::sim {
namespace {

// Orders slots exactly as the kernel: ascending key = score descending, then slot index
// (request id, then position) ascending. Non-negative float32 order like their bit patterns;
// -0.0f is folded into +0.0f because the kernel compares them equal.
inline uint64_t SlotKey(float score, int32_t slot) {
  uint32_t bits;
  std::memcpy(&bits, &score, sizeof(bits));
  if (bits == 0x80000000u) bits = 0;
  return (static_cast<uint64_t>(0xFFFFFFFFu - bits) << 32) | static_cast<uint32_t>(slot);
}

// Monotone in the score for scores >= 0 (bigger score, same or bigger bucket); -0.0f goes
// with +0.0f. The pattern's bits [16, 31): 128 buckets per octave, the top one holding 1 and
// above (survival scores are at most 1), bucket 0 everything below about 2^-31.
constexpr int32_t kTopBucketField = 0x3F80;  // pattern >> 16 of 1.0f
constexpr int32_t kBucketCount = 4096;
inline int32_t ScoreBucket(float score) {
  uint32_t bits;
  std::memcpy(&bits, &score, sizeof(bits));
  bits = bits == 0x80000000u ? 0 : bits;
  const int32_t b = static_cast<int32_t>(bits >> 16) - (kTopBucketField - (kBucketCount - 1));
  return b < 0 ? 0 : (b > kBucketCount - 1 ? kBucketCount - 1 : b);
}

}  // namespace

int32_t TopBAllocator::Allocate(const float* scores, const int32_t* max_drafts,
                                int32_t num_decodes, int32_t max_k, int32_t budget,
                                int32_t* kept) {
  static_assert(kBucketCount == kBuckets, "one bucket count");
  static_assert(kRowPad >= simd::kBucketRowPad, "the rows' scan reads a row 8 buckets at a time");
  int32_t eligible = 0;
  for (int32_t r = 0; r < num_decodes; ++r) eligible += max_drafts[r];
  if (budget >= eligible) {
    for (int32_t r = 0; r < num_decodes; ++r) kept[r] = max_drafts[r];
    return eligible;
  }
  if (budget <= 0) {
    for (int32_t r = 0; r < num_decodes; ++r) kept[r] = 0;
    return 0;
  }
  // Pass 1: bucket of every slot (a loop the compiler vectorizes), then per request the
  // ineligible slots marked -1 and the eligible ones counted. count[b + 1] counts bucket b
  // (count[0] is a sink for the ineligible slots' -1).
  const int32_t num_slots = num_decodes * max_k;
  bucket_.resize(static_cast<size_t>(num_slots) + kRowPad);
  keys_.resize(static_cast<size_t>(num_slots));
  boundary_slots_.resize(static_cast<size_t>(num_slots));
  int16_t* bucket = bucket_.data();
  int32_t* count = bucket_count_.data();
  for (int32_t slot = 0; slot < num_slots; ++slot)
    bucket[slot] = static_cast<int16_t>(ScoreBucket(scores[slot]));
  for (int32_t r = 0; r < num_decodes; ++r) {
    int16_t* row = bucket + r * max_k;
    const int32_t d = max_drafts[r];
    for (int32_t k = 0; k < d; ++k) ++count[row[k] + 1];
    for (int32_t k = d; k < max_k; ++k) row[k] = -1;
  }
  // The boundary bucket: the one holding the budget-th best eligible slot (budget < eligible).
  int32_t above = 0, boundary = kBuckets - 1;
  while (above + count[boundary + 1] < budget) above += count[1 + boundary--];
  const int32_t need = budget - above;  // best slots to take from the boundary bucket
  // Pass 2: per request, the slots above the boundary bucket counted; the boundary bucket's
  // slots listed (written for every slot, kept for its own); every count cleared for the next
  // call. Then the boundary bucket's keys, ordered exactly only up to the need-th.
  int32_t* in_boundary = boundary_slots_.data();
  const int32_t m = simd::ScanBoundaryRows(bucket, num_decodes, max_k, boundary, count, kept, in_boundary);
  uint64_t* keys = keys_.data();
  for (int32_t i = 0; i < m; ++i) keys[i] = SlotKey(scores[in_boundary[i]], in_boundary[i]);
  std::nth_element(keys, keys + (need - 1), keys + m);
  const uint64_t threshold = keys[need - 1];
  // Pass 3: the boundary bucket's best `need` (their keys name their slot).
  for (int32_t i = 0; i < m; ++i)
    if (keys[i] <= threshold) ++kept[static_cast<uint32_t>(keys[i]) / static_cast<uint32_t>(max_k)];
  return budget;
}

}  // namespace dspark::sim

namespace dspark::sim {

absl::Status CheckCostCurve(const CostCurve& curve, absl::string_view what) {
  if (curve.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": expected at least one point"));
  for (size_t i = 0; i < curve.size(); ++i) {
    if (!(curve[i].first >= 0) || !(curve[i].second >= 0) || !std::isfinite(curve[i].second))
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: point %d: expected a size >= 0 and a finite cost >= 0, got [%g, %g]", what, i,
          curve[i].first, curve[i].second));
    if (i > 0 && !(curve[i].first > curve[i - 1].first))
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: point %d: sizes must ascend strictly, got %g after %g", what, i, curve[i].first,
          curve[i - 1].first));
  }
  return absl::OkStatus();
}

namespace {

// np.interp(x, xp, fp) for one x, as numpy computes it: fp[0] below xp[0], fp[last] at and
// above xp[last], fp[j] at xp[j], otherwise slope * (x - xp[j]) + fp[j] with slope =
// (fp[j+1] - fp[j]) / (xp[j+1] - xp[j]) for xp[j] < x < xp[j+1].
double NumpyInterp(double x, const double* xp, const double* fp, size_t n) {
  if (x < xp[0]) return fp[0];
  if (x >= xp[n - 1]) return fp[n - 1];
  const size_t j = static_cast<size_t>(std::upper_bound(xp, xp + n, x) - xp) - 1;  // xp[j] <= x
  if (xp[j] == x) return fp[j];
  const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  return slope * (x - xp[j]) + fp[j];
}

// vLLM's build_table (adaptive.h, BuildCostTables, gives the rules).
std::vector<double> BuildTable(int32_t limit, const CostCurve& curve, int32_t cudagraph_limit,
                               double floor) {
  const size_t n = curve.size();
  std::vector<double> xs(n), ys(n);
  double running = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < n; ++i) {
    xs[i] = curve[i].first;
    running = std::max(running, curve[i].second);  // np.maximum.accumulate
    ys[i] = running;
  }
  // The points above the capture limit, where the table interpolates.
  const size_t first_above = cudagraph_limit != 0
      ? static_cast<size_t>(std::upper_bound(xs.begin(), xs.end(), static_cast<double>(cudagraph_limit)) - xs.begin())
      : n;
  const bool smooth_part = first_above < n;
  std::vector<double> out(static_cast<size_t>(std::max(limit, 0)) + 1);
  size_t idx = 0;  // searchsorted(xs, v, 'left'): the first point with xs[idx] >= v
  for (size_t v = 0; v < out.size(); ++v) {
    const double x = static_cast<double>(v);
    while (idx < n && xs[idx] < x) ++idx;
    double y = ys[std::min(idx, n - 1)];
    if (smooth_part && static_cast<int64_t>(v) > cudagraph_limit)
      y = NumpyInterp(x, xs.data() + first_above, ys.data() + first_above, n - first_above);
    if (n > 1 && x > xs[n - 1]) {
      const double slope = (ys[n - 1] - ys[n - 2]) / (xs[n - 1] - xs[n - 2]);
      y = ys[n - 1] + slope * (x - xs[n - 1]);
    }
    out[v] = std::max(y, floor);
  }
  return out;
}

}  // namespace

DraftCostTables BuildCostTables(const CostCurve& draft_curve, const CostCurve& verify_curve,
                                int32_t max_num_reqs, int32_t max_batch_tokens,
                                int32_t cudagraph_limit) {
  return {BuildTable(max_num_reqs, draft_curve, cudagraph_limit, 0.0),
          BuildTable(max_batch_tokens, verify_curve, cudagraph_limit, 1e-6)};
}

std::vector<int32_t> CostProfileSizes(const std::vector<int32_t>& capture_sizes,
                                      int32_t max_num_batched_tokens) {
  std::vector<int32_t> sizes = capture_sizes;
  if (capture_sizes.empty()) return sizes;
  std::vector<int32_t> tail;
  int32_t size = capture_sizes.back();
  tail.push_back(static_cast<int32_t>(std::min<int64_t>(size + size / 2, max_num_batched_tokens)));
  while (size < max_num_batched_tokens) {
    size = static_cast<int32_t>(std::min<int64_t>(2 * static_cast<int64_t>(size), max_num_batched_tokens));
    tail.push_back(size);
  }
  std::sort(tail.begin(), tail.end());
  tail.erase(std::unique(tail.begin(), tail.end()), tail.end());
  for (int32_t t : tail)
    if (!std::binary_search(capture_sizes.begin(), capture_sizes.end(), t)) sizes.push_back(t);
  return sizes;
}

int32_t MaxChunkLogits(int64_t vocab_size) {
  constexpr int64_t kMaxChunkBytes = int64_t{1} << 30, kFp32Bytes = 4;
  if (vocab_size <= 0) return 1;
  return static_cast<int32_t>(std::max<int64_t>(1, kMaxChunkBytes / (vocab_size * kFp32Bytes)));
}

int32_t MaxDraftBudget(const BudgetInputs& in) {
  int64_t total = 0;
  for (int32_t r = 0; r < in.num_decodes; ++r) total += in.valid_drafts[r];
  const int64_t room = std::max<int64_t>(
      0, static_cast<int64_t>(in.max_total_logits) - static_cast<int64_t>(in.num_reqs) * in.num_bonus_tokens);
  return static_cast<int32_t>(std::min(total, room));
}

int32_t ComputeDraftBudget(const BudgetInputs& in, const DraftCostTables& tables,
                           DraftBudgetScratch* scratch) {
  std::vector<double>& scores = scratch->scores;
  int32_t total = 0;
  for (int32_t r = 0; r < in.num_decodes; ++r) total += in.valid_drafts[r];
  scores.resize(static_cast<size_t>(total));
  size_t at = 0;
  for (int32_t r = 0; r < in.num_decodes; ++r) {
    double survival = 1.0;
    const float* row = in.stale_conf + static_cast<size_t>(r) * in.k;
    for (int32_t k = 0; k < in.valid_drafts[r]; ++k) {
      survival *= static_cast<double>(row[k]);  // np.cumprod of float32 values cast to float64
      scores[at++] = survival;
    }
  }
  SortScoresDescending(&scores, &scratch->sort);
  const int32_t max_budget = MaxDraftBudget(in);  // scores[:max_draft_budget]
  // Indices past a table's end cannot occur in a step the scheduler accepted; clamp anyway.
  const auto verify = [&](int64_t n) {
    return tables.verify_ms[static_cast<size_t>(std::min<int64_t>(n, static_cast<int64_t>(tables.verify_ms.size()) - 1))];
  };
  const double draft = tables.draft_ms[static_cast<size_t>(
      std::min<int64_t>(in.num_reqs, static_cast<int64_t>(tables.draft_ms.size()) - 1))];
  const double sampling = static_cast<double>(in.num_sampling);
  int32_t best_b = 0;
  double best = sampling / (draft + verify(in.non_draft_total));
  // verify(non_draft_total + b) read straight from the table up to its last entry, then that
  // entry (what the clamp gives), in two loops without the clamp.
  const int64_t last = static_cast<int64_t>(tables.verify_ms.size()) - 1;
  const int32_t unclamped =
      static_cast<int32_t>(std::max<int64_t>(0, std::min<int64_t>(max_budget, last - in.non_draft_total)));
  const double* verify_at = tables.verify_ms.data() + std::min<int64_t>(in.non_draft_total, last);
  const double* sorted = scores.data();
  double cumsum = 0.0;  // np.cumsum(scores): left to right from 0; num_sampling added after
  int32_t b = 1;
  for (; b <= unclamped; ++b) {
    cumsum += sorted[b - 1];
    const double value = (sampling + cumsum) / (draft + verify_at[b]);
    if (value > best) {  // np.argmax: the first maximum
      best = value;
      best_b = b;
    }
  }
  for (; b <= max_budget; ++b) {
    cumsum += sorted[b - 1];
    const double value = (sampling + cumsum) / (draft + tables.verify_ms[static_cast<size_t>(last)]);
    if (value > best) {
      best = value;
      best_b = b;
    }
  }
  return best_b;
}

void HostDraftSplit(const int32_t* drafts, int32_t n, int32_t budget, int32_t* split) {
  int64_t total = 0;
  int32_t nv = 0;
  for (int32_t i = 0; i < n; ++i) {
    total += drafts[i];
    nv += drafts[i] > 0;
  }
  if (budget == total) {  // compact_batch returns the batch as scheduled
    for (int32_t i = 0; i < n; ++i) split[i] = drafts[i];
    return;
  }
  const int32_t each = nv > 0 ? budget / nv : 0, extra = nv > 0 ? budget % nv : 0;
  int32_t v = 0;  // verification rows seen
  for (int32_t i = 0; i < n; ++i) {
    if (drafts[i] <= 0) {
      split[i] = 0;
      continue;
    }
    split[i] = each + (v < extra);
    ++v;
  }
}

}  // namespace dspark::sim
