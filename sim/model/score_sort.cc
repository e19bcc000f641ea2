#include "sim/model/score_sort.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace dspark::sim {
namespace {
constexpr size_t kMinBucketed = 512;
}  // namespace

void SortScoresDescending(std::vector<double>* v, ScoreSortScratch* scratch) {
  const size_t n = v->size();
  // Below a few hundred scores the bucket pass's sum over the bucket range costs more than
  // std::sort (a Vidur trace's steps: tens of drafts over many octaves).
  if (n < kMinBucketed) {
    std::sort(v->begin(), v->end(), std::greater<double>());
    return;
  }
  double* x = v->data();
  // +inf is 0x7FF0000000000000; anything above it is a NaN or has the sign bit set.
  constexpr uint64_t kMaxPattern = 0x7FF0000000000000ULL;
  uint64_t top = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    top = std::max(top, bits);
  }
  if (top > kMaxPattern) {
    std::sort(v->begin(), v->end(), std::greater<double>());
    return;
  }
  constexpr int kLast = ScoreSortScratch::kBuckets - 1;
  const uint64_t top_bucket = top >> 42;
  const auto bucket_of = [top_bucket](uint64_t bits) {
    return static_cast<int>(std::min<uint64_t>(top_bucket - (bits >> 42), kLast));
  };
  // Counting pass: start[b + 1] counts bucket b; bucket 0 holds the largest scores. Entries
  // past the last bucket used are zero between calls, so only [0, hi] is summed and cleared.
  std::array<int32_t, ScoreSortScratch::kBuckets + 1>& start = scratch->start;
  int hi = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    const int b = bucket_of(bits);
    hi = std::max(hi, b);
    ++start[b + 1];
  }
  for (int b = 0; b < hi; ++b) start[b + 1] += start[b];
  std::vector<uint64_t>& keys = scratch->keys;
  keys.resize(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    keys[static_cast<size_t>(start[bucket_of(bits)]++)] = bits;
  }
  // start[b] is now the end of bucket b. The last bucket may be large: std::sort it; the
  // others are short, and an insertion pass never moves a key out of its bucket (every key
  // of an earlier bucket is larger).
  const size_t last_begin = hi == kLast ? static_cast<size_t>(start[kLast - 1]) : n;
  std::sort(keys.begin() + static_cast<std::ptrdiff_t>(last_begin), keys.end(),
            std::greater<uint64_t>());
  for (size_t i = 1; i < last_begin; ++i) {
    const uint64_t key = keys[i];
    size_t j = i;
    while (j > 0 && keys[j - 1] < key) {
      keys[j] = keys[j - 1];
      --j;
    }
    keys[j] = key;
  }
  std::memcpy(x, keys.data(), n * sizeof(uint64_t));
  std::fill(start.begin(), start.begin() + hi + 2, 0);
}

}  // namespace dspark::sim
