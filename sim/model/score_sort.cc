#include "sim/model/score_sort.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace dspark::sim {
namespace {

constexpr size_t kMinBucketed = 512;
constexpr int kShift = 52 - ScoreSortScratch::kMantissaBits;
constexpr int kLast = ScoreSortScratch::kBuckets - 1;
constexpr uint64_t kOne = 0x3FF0000000000000ULL;   // 1.0
constexpr uint64_t kHalf = 0x3FE0000000000000ULL;  // 0.5
// 2^-(kOctaves + 1): below it 1 - x shares bucket 0 (x < 2^-17: the last bucket).
constexpr uint64_t kFloor = static_cast<uint64_t>(1023 - ScoreSortScratch::kOctaves - 1) << 52;
constexpr int kSecondGroup = 2 + static_cast<int>((kHalf >> kShift) - (kFloor >> kShift));

// Buckets ascend as values descend. x >= 1/2: 1 - x is exact and ascends; x < 1/2: its
// pattern descends. Both are computed and one selected (no branch on the value: the scores
// fall on both sides at random). The floors' low kShift bits are zero, so a pattern is below
// a floor exactly when its bucket field is; group B's next index past its end is kLast.
inline int BucketOf(double x, uint64_t bits) {
  constexpr int kFloorT = static_cast<int>(kFloor >> kShift), kHalfT = static_cast<int>(kHalf >> kShift);
  const double y = 1.0 - x;
  uint64_t ybits;
  std::memcpy(&ybits, &y, sizeof(ybits));
  const int near_one = std::max(0, 1 + static_cast<int>(ybits >> kShift) - kFloorT);
  const int below_half = std::min(kLast, kSecondGroup + (kHalfT - 1) - static_cast<int>(bits >> kShift));
  return bits >= kHalf ? near_one : below_half;
}
static_assert(kSecondGroup + static_cast<int>(((kHalf >> kShift) - 1) - (kFloor >> kShift)) < kLast,
              "the buckets of x in [2^-17, 1/2) end before the last bucket");

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
  // Patterns of [+0, 1] are [0, kOne]; anything above is larger than 1, a NaN or negative.
  uint64_t top = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    top = std::max(top, bits);
  }
  if (top > kOne) {
    std::sort(v->begin(), v->end(), std::greater<double>());
    return;
  }
  // Counting pass: start[b + 1] counts bucket b. Entries past the last bucket used are zero
  // between calls, so only [0, hi] is summed and cleared.
  std::array<int32_t, ScoreSortScratch::kBuckets + 1>& start = scratch->start;
  std::vector<uint16_t>& bucket = scratch->bucket;
  bucket.resize(n);
  int hi = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    const int b = BucketOf(x[i], bits);
    bucket[i] = static_cast<uint16_t>(b);
    hi = std::max(hi, b);
    ++start[b + 1];
  }
  for (int b = 0; b < hi; ++b) start[b + 1] += start[b];
  std::vector<uint64_t>& keys = scratch->keys;
  keys.resize(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    keys[static_cast<size_t>(start[bucket[i]]++)] = bits;
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
