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
static_assert(ScoreSortScratch::kBuckets <= 65536, "a bucket fits 16 bits");

// Buckets ascend as values descend. x >= 1/2: 1 - x is exact and ascends; x < 1/2: its
// pattern descends. Both are computed and one selected by a mask (no branch on the value: the
// scores fall on both sides at random). The floors' low kShift bits are zero, so a pattern is
// below a floor exactly when its bucket field is; group B's next index past its end is kLast.
// Inputs outside [0, 1] get some bucket in [0, kLast] (the caller then takes std::sort).
inline int BucketOf(double x, uint64_t bits) {
  constexpr int kFloorT = static_cast<int>(kFloor >> kShift), kHalfT = static_cast<int>(kHalf >> kShift);
  const double y = 1.0 - x;
  uint64_t ybits;
  std::memcpy(&ybits, &y, sizeof(ybits));
  int near_one = 1 + static_cast<int>(ybits >> kShift) - kFloorT;
  near_one = near_one < 0 ? 0 : (near_one > kLast ? kLast : near_one);
  int below_half = kSecondGroup + (kHalfT - 1) - static_cast<int>(bits >> kShift);
  below_half = below_half > kLast ? kLast : below_half;
  const int mask = -static_cast<int>(bits >= kHalf);
  return (near_one & mask) | (below_half & ~mask);
}
static_assert(kSecondGroup + static_cast<int>(((kHalf >> kShift) - 1) - (kFloor >> kShift)) < kLast,
              "the buckets of x in [2^-17, 1/2) end before the last bucket");

}  // namespace

void SortScoresDescending(std::vector<double>* v, ScoreSortScratch* scratch) {
  const size_t n = v->size();
  // Below a few hundred scores the bucket passes cost more than std::sort (a Vidur trace's
  // steps: tens of drafts over many octaves).
  if (n < kMinBucketed) {
    std::sort(v->begin(), v->end(), std::greater<double>());
    return;
  }
  double* x = v->data();
  ScoreSortScratch& s = *scratch;
  s.bucket.resize(n);
  s.bucket_lo.resize(n);
  s.bucket_out.resize(n);
  s.bits_lo.resize(n);
  s.bits_out.resize(n);
  uint16_t* bucket = s.bucket.data();
  int32_t* low = s.low.data();
  int32_t* high = s.high.data();
  int32_t* high4 = s.high4.data();
  std::fill(s.low.begin(), s.low.end(), 0);
  std::fill(s.high4.begin(), s.high4.end(), 0);
  // Counting pass: each value's bucket and the counts of its two bytes (the high byte's in four
  // interleaved copies: there are few high bytes, and consecutive values often share one).
  // Patterns of [+0, 1] are [0, kOne]; anything above is larger than 1, a NaN or negative.
  uint64_t top = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    top = std::max(top, bits);
    const int b = BucketOf(x[i], bits);
    bucket[i] = static_cast<uint16_t>(b);
    ++low[b & 0xFF];
    ++high4[(b >> 8) * 4 + static_cast<int>(i & 3)];
  }
  if (top > kOne) {
    std::sort(v->begin(), v->end(), std::greater<double>());
    return;
  }
  int32_t sum = 0;
  for (int d = 0; d < 256; ++d) {
    const int32_t c = low[d];
    low[d] = sum;
    sum += c;
  }
  sum = 0;
  for (int d = 0; d < ScoreSortScratch::kHighDigits; ++d) {
    const int32_t* q = &high4[d * 4];
    high[d] = sum;
    sum += q[0] + q[1] + q[2] + q[3];
  }
  // Two stable scatters, by the low byte then the high byte: bucket order, each bucket in
  // input order.
  uint16_t* bucket_lo = s.bucket_lo.data();
  uint64_t* bits_lo = s.bits_lo.data();
  for (size_t i = 0; i < n; ++i) {
    const uint16_t b = bucket[i];
    const int32_t at = low[b & 0xFF]++;
    bucket_lo[at] = b;
    std::memcpy(&bits_lo[at], &x[i], sizeof(uint64_t));
  }
  uint16_t* bucket_out = s.bucket_out.data();
  uint64_t* out = s.bits_out.data();
  for (size_t i = 0; i < n; ++i) {
    const uint16_t b = bucket_lo[i];
    const int32_t at = high[b >> 8]++;
    bucket_out[at] = b;
    out[at] = bits_lo[i];
  }
  // The last bucket (may be large) by std::sort; the others are short: an insertion pass inside
  // each run of one bucket (every key of an earlier bucket is larger).
  size_t end = n;
  while (end > 0 && bucket_out[end - 1] == kLast) --end;
  std::sort(out + end, out + n, std::greater<uint64_t>());
  for (size_t i = 1; i < end; ++i) {
    const uint16_t b = bucket_out[i];
    if (b != bucket_out[i - 1]) continue;
    const uint64_t key = out[i];
    size_t j = i;
    while (j > 0 && bucket_out[j - 1] == b && out[j - 1] < key) {
      out[j] = out[j - 1];
      --j;
    }
    out[j] = key;
  }
  std::memcpy(x, out, n * sizeof(uint64_t));
}

}  // namespace dspark::sim
