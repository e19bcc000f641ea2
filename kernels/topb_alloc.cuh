// DSpark adaptive verification: the device-side draft allocation (docs/design.md section 3).
//
// The host chose a draft budget B. The device keeps the global top-B (request, position) slots
// ranked by survival score S(r, k) = prod_{i<=k} p_i, ties broken by (score descending,
// request id, position), and rewrites the device query boundaries:
//
//   kept[r]          = number of kept slots of decode r
//   qsl[0]           = 0
//   qsl[r + 1]       = sum_{r' <= r} (base_tokens + kept[r'])        for r < num_decodes
//   qsl[nd + 1 + j]  = qsl[nd] + tail_offsets[j]                      for j < num_reqs - nd
//
// where nd = num_decodes and tail_offsets are the host-known cumulative query lengths of the
// requests after the decodes (prefill chunks, then graph padding with length 0); in a pure
// decode step they are all 0, so the tail is filled with the total. When cu_num_logits is
// given, it also writes compact_batch's other rewrite (vLLM adaptive_verification.py):
//
//   cu_num_logits[r] = sum_{r' < r} (kept[r'] + num_bonus)   for r <= num_logit_reqs
//
// over the real requests (decodes first; the others keep no drafts).
//
// The scores are float32 computed once on the host in a fixed order and passed in, so CPU
// emulation and GPU give the same allocation bit for bit (docs/design.md section 6). Survival scores
// never increase along a request's positions and ties go to the lower position, so every
// request keeps a prefix of its drafts.
//
// One block: phase 0 stages the scores in shared memory, phase 1 ranks every slot by counting
// the strictly better slots (a total order, so exactly min(B, eligible) slots get rank < B),
// phase 2 counts kept slots per request, phase 3 writes the boundaries. Work is O(slots^2 /
// threads), fine for the at most kTopBMaxSlots slots of one step.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

namespace dspark {

inline constexpr int32_t kTopBMaxK = 8;          // [slots per request] score row length cap
inline constexpr int32_t kTopBMaxSlots = 4096;   // [slots] num_decodes * max_k cap (one block)
inline constexpr int32_t kTopBMaxDecodes = 1024; // [requests] decode requests cap
inline constexpr int32_t kTopBThreads = 256;     // [threads] block size

struct TopBAllocParams {
  const float* scores;          // [num_decodes, max_k] survival score of slot (r, k), >= 0;
                                // only k < max_drafts[r] is read
  const int32_t* max_drafts;    // [num_decodes] eligible drafts of request r, in [0, max_k]
  const int32_t* tail_offsets;  // [num_reqs - num_decodes] cumulative query lengths of the
                                // requests after the decodes; null when num_reqs == num_decodes
  int32_t* query_start_loc;     // [num_reqs + 1] out: device boundaries
  int32_t* kept;                // [num_decodes] out: kept drafts per request; may be null
  int32_t num_decodes;          // nd: [requests] decode requests, first in the batch
  int32_t num_reqs;             // R: [requests] all requests incl. prefills and padding, >= nd
  int32_t max_k;                // [slots] row length of `scores`, in [1, kTopBMaxK]
  int32_t budget;               // B: [tokens] drafts to keep in total, >= 0 (min(B, eligible))
  int32_t base_tokens;          // [tokens] tokens each decode carries besides its kept drafts
  int32_t* cu_num_logits = nullptr;  // [num_logit_reqs + 1] out, optional
  int32_t num_logit_reqs = 0;   // [requests] real requests, in [num_decodes, num_reqs]
  int32_t num_bonus = 1;        // [tokens] logits per request besides its kept drafts
};

inline absl::Status CanImplementTopBAlloc(const TopBAllocParams& p) {
  if (p.num_decodes < 0 || p.num_decodes > kTopBMaxDecodes)
    return absl::OutOfRangeError(absl::StrFormat("topb_alloc: num_decodes=%d must be in [0, %d]",
                                                 p.num_decodes, kTopBMaxDecodes));
  if (p.num_reqs < p.num_decodes)
    return absl::InvalidArgumentError(absl::StrFormat(
        "topb_alloc: num_reqs=%d must be >= num_decodes=%d", p.num_reqs, p.num_decodes));
  if (p.max_k < 1 || p.max_k > kTopBMaxK)
    return absl::OutOfRangeError(
        absl::StrFormat("topb_alloc: max_k=%d must be in [1, %d]", p.max_k, kTopBMaxK));
  if (p.num_decodes * p.max_k > kTopBMaxSlots)
    return absl::OutOfRangeError(absl::StrFormat(
        "topb_alloc: num_decodes * max_k = %d slots exceeds one block's %d", p.num_decodes * p.max_k,
        kTopBMaxSlots));
  if (p.budget < 0 || p.base_tokens < 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "topb_alloc: budget=%d and base_tokens=%d must be >= 0", p.budget, p.base_tokens));
  if (p.num_reqs > p.num_decodes && p.tail_offsets == nullptr)
    return absl::InvalidArgumentError("topb_alloc: tail_offsets is required when num_reqs > num_decodes");
  if (p.cu_num_logits != nullptr && (p.num_logit_reqs < p.num_decodes || p.num_logit_reqs > p.num_reqs || p.num_bonus < 0))
    return absl::InvalidArgumentError(absl::StrFormat(
        "topb_alloc: num_logit_reqs=%d must be in [num_decodes=%d, num_reqs=%d] and num_bonus=%d >= 0",
        p.num_logit_reqs, p.num_decodes, p.num_reqs, p.num_bonus));
  if (p.query_start_loc == nullptr || (p.num_decodes > 0 && (p.scores == nullptr || p.max_drafts == nullptr)))
    return absl::InvalidArgumentError("topb_alloc: scores, max_drafts and query_start_loc are required");
  return absl::OkStatus();
}

// Slot a = (r_a, k_a) ranks before slot b: higher score, then lower request id, then lower
// position. Slot indices are r * max_k + k, so the id order is the slot-index order.
DS_HD_INLINE bool TopBSlotBefore(float score_a, int32_t slot_a, float score_b, int32_t slot_b) {
  return score_a > score_b || (score_a == score_b && slot_a < slot_b);
}

// Rank of eligible slot `s` among the eligible slots of `score` ([num_slots], ineligible slots
// hold a negative sentinel): the number of strictly better slots.
DS_HD_INLINE int32_t TopBSlotRank(const float* score, int32_t num_slots, int32_t s) {
  const float mine = score[s];
  int32_t rank = 0;
  for (int32_t o = 0; o < num_slots; ++o)
    rank += (score[o] >= 0.0f && TopBSlotBefore(score[o], o, mine, s)) ? 1 : 0;
  return rank;
}

// qsl[r] for r in [0, num_decodes]: r * base + kept drafts of requests before r.
DS_HD_INLINE int32_t TopBDecodeBoundary(const int32_t* kept, int32_t base_tokens, int32_t r) {
  int32_t sum = r * base_tokens;
  for (int32_t i = 0; i < r; ++i) sum += kept[i];
  return sum;
}

struct TopBAllocKernel {
  static constexpr int kPhases = 4;
  struct Shared {
    float score[kTopBMaxSlots];       // staged scores; -1 marks an ineligible slot
    uint8_t keep[kTopBMaxSlots];      // slot kept (rank < budget)
    int32_t kept[kTopBMaxDecodes];    // kept drafts per request
  };
  TopBAllocParams p;

  static LaunchShape Shape(const TopBAllocParams&) { return {1, kTopBThreads}; }

  DS_HD void Phase(int phase, const ThreadCtx& c, Shared& s) const {
    const int32_t num_slots = p.num_decodes * p.max_k;
    if (phase == 0) {
      for (int32_t i = c.thread; i < num_slots; i += c.block_dim) {
        const int32_t r = i / p.max_k, k = i % p.max_k;
        s.score[i] = k < p.max_drafts[r] ? p.scores[i] : -1.0f;
      }
    } else if (phase == 1) {
      for (int32_t i = c.thread; i < num_slots; i += c.block_dim)
        s.keep[i] = (s.score[i] >= 0.0f && TopBSlotRank(s.score, num_slots, i) < p.budget) ? 1 : 0;
    } else if (phase == 2) {
      for (int32_t r = c.thread; r < p.num_decodes; r += c.block_dim) {
        int32_t n = 0;
        for (int32_t k = 0; k < p.max_k; ++k) n += s.keep[r * p.max_k + k];
        s.kept[r] = n;
        if (p.kept != nullptr) p.kept[r] = n;
      }
    } else {
      if (p.cu_num_logits != nullptr)
        for (int32_t r = c.thread; r <= p.num_logit_reqs; r += c.block_dim)
          p.cu_num_logits[r] = TopBDecodeBoundary(s.kept, 0, r < p.num_decodes ? r : p.num_decodes) + r * p.num_bonus;
      for (int32_t r = c.thread; r <= p.num_reqs; r += c.block_dim) {
        if (r <= p.num_decodes) {
          p.query_start_loc[r] = TopBDecodeBoundary(s.kept, p.base_tokens, r);
        } else {
          p.query_start_loc[r] = TopBDecodeBoundary(s.kept, p.base_tokens, p.num_decodes) +
                                 p.tail_offsets[r - p.num_decodes - 1];
        }
      }
    }
  }

  // CPU path: the same staging (phase 0), the ranks by one sort with TopBSlotBefore as the
  // order (it is a strict total order on the eligible slots, so a slot's rank, the number of
  // strictly better slots, is its place in the sorted order), and the boundaries as running
  // sums (TopBDecodeBoundary's sums, int32 as there). O(slots log slots) instead of
  // O(slots^2 / threads) per thread. A NaN score is not >= 0, so it is ineligible there and
  // here, and never reaches the sort.
  void CpuRun(LaunchShape shape) const {
    if (shape.grid <= 0) return;
    auto smem = std::make_unique<Shared>();
    Shared& s = *smem;
    std::memset(static_cast<void*>(&s), 0xA5, sizeof(Shared));
    Phase(0, ThreadCtx{0, 0, 1, 1}, s);
    const int32_t num_slots = p.num_decodes * p.max_k;
    std::vector<int32_t> order;
    order.reserve(static_cast<size_t>(num_slots));
    for (int32_t i = 0; i < num_slots; ++i) {
      s.keep[i] = 0;
      if (s.score[i] >= 0.0f) order.push_back(i);
    }
    std::sort(order.begin(), order.end(),
              [&s](int32_t a, int32_t b) { return TopBSlotBefore(s.score[a], a, s.score[b], b); });
    for (size_t rank = 0; rank < order.size() && static_cast<int64_t>(rank) < p.budget; ++rank) s.keep[order[rank]] = 1;
    Phase(2, ThreadCtx{0, 0, 1, 1}, s);
    // Running sums in uint32 (wrapping like the int32 sums of TopBDecodeBoundary on the GPU).
    uint32_t kept_before = 0;  // kept drafts of requests [0, r)
    for (int32_t r = 0; r <= p.num_decodes; ++r) {
      if (r > 0) kept_before += static_cast<uint32_t>(s.kept[r - 1]);
      const uint32_t q = static_cast<uint32_t>(r) * static_cast<uint32_t>(p.base_tokens) + kept_before;
      p.query_start_loc[r] = static_cast<int32_t>(q);
      if (p.cu_num_logits != nullptr && r <= p.num_logit_reqs)
        p.cu_num_logits[r] = static_cast<int32_t>(kept_before + static_cast<uint32_t>(r) * p.num_bonus);
    }
    if (p.cu_num_logits != nullptr)
      for (int32_t r = p.num_decodes + 1; r <= p.num_logit_reqs; ++r)
        p.cu_num_logits[r] = static_cast<int32_t>(kept_before + static_cast<uint32_t>(r) * p.num_bonus);
    const uint32_t decodes_end = static_cast<uint32_t>(p.num_decodes) * static_cast<uint32_t>(p.base_tokens) + kept_before;
    for (int32_t r = p.num_decodes + 1; r <= p.num_reqs; ++r)
      p.query_start_loc[r] = static_cast<int32_t>(decodes_end + static_cast<uint32_t>(p.tail_offsets[r - p.num_decodes - 1]));
  }
};

#if defined(__CUDACC__)
inline cudaError_t LaunchTopBAlloc(const TopBAllocParams& p, cudaStream_t stream) {
  return LaunchFunctor(TopBAllocKernel{p}, TopBAllocKernel::Shape(p), stream);
}
#endif

inline void EmulateTopBAlloc(const TopBAllocParams& p) {
  EmulateGrid(TopBAllocKernel{p}, TopBAllocKernel::Shape(p));
}

}  // namespace dspark
