#include "sim/model/adaptive.h"

#include <algorithm>
#include <array>

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

// Monotone in the score for scores >= 0 (bigger score, bigger bucket); -0.0f goes with +0.0f.
inline int32_t ScoreBucket(float score) {
  uint32_t bits;
  std::memcpy(&bits, &score, sizeof(bits));
  if (bits == 0x80000000u) bits = 0;
  return static_cast<int32_t>(bits >> 20) & 0x7FF;
}

}  // namespace

int32_t TopBAllocator::Allocate(const float* scores, const int32_t* max_drafts,
                                int32_t num_decodes, int32_t max_k, int32_t budget,
                                int32_t* kept) {
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
  // Pass 1: bucket of every slot (-1: ineligible) and bucket counts.
  const int32_t num_slots = num_decodes * max_k;
  bucket_.resize(static_cast<size_t>(num_slots));
  bucket_count_.fill(0);
  int32_t hi = 0;
  for (int32_t r = 0; r < num_decodes; ++r) {
    const int32_t base = r * max_k;
    for (int32_t k = 0; k < max_k; ++k) {
      const int32_t b = k < max_drafts[r] ? ScoreBucket(scores[base + k]) : -1;
      bucket_[base + k] = static_cast<int16_t>(b);
      if (b >= 0) {
        ++bucket_count_[b];
        hi = std::max(hi, b);
      }
    }
  }
  int32_t above = 0, boundary = hi;
  while (above + bucket_count_[boundary] < budget) above += bucket_count_[boundary--];
  const int32_t need = budget - above;  // best slots to take from the boundary bucket
  // Pass 2: exact order inside the boundary bucket only.
  keys_.clear();
  for (int32_t slot = 0; slot < num_slots; ++slot)
    if (bucket_[slot] == boundary) keys_.push_back(SlotKey(scores[slot], slot));
  std::nth_element(keys_.begin(), keys_.begin() + (need - 1), keys_.end());
  const uint64_t threshold = keys_[static_cast<size_t>(need - 1)];
  // Pass 3: kept slots per request.
  for (int32_t r = 0; r < num_decodes; ++r) {
    const int32_t base = r * max_k;
    int32_t n = 0;
    for (int32_t k = 0; k < max_k; ++k) {
      const int32_t b = bucket_[base + k];
      n += (b > boundary) | ((b == boundary) & (SlotKey(scores[base + k], base + k) <= threshold));
    }
    kept[r] = n;
  }
  return budget;
}

}  // namespace dspark::sim
