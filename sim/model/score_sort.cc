#include "sim/model/score_sort.h"

#include <algorithm>
#include <cstring>
#include <functional>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dspark::sim {
namespace {

constexpr size_t kMinBucketed = 512;
constexpr size_t kMaxBucketed = size_t{1} << 16;  // indices in the keys' low 16 bits
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
// The clamps are taken in double, before the bucket field is read: max(v, kClampLow) with
// kClampLow the largest double below 2^-17's bucket field gives bucket 0 (1 - x) or kLast (x)
// to everything below that field, as clamping the field itself does; so the arithmetic is
// branch-free and the same in the SSE2 and the scalar form. Inputs outside [0, 1] get some
// bucket in [0, 2^16) (the caller then takes std::sort before any bucket is used).
constexpr uint64_t kClampLowBits = kFloor - (uint64_t{1} << kShift);  // field kFloorT - 1
constexpr int64_t kNearOneBase = 1 - static_cast<int64_t>(kFloor >> kShift);
constexpr int64_t kBelowHalfBase = kSecondGroup + static_cast<int64_t>(kHalf >> kShift) - 1;
inline int BucketOf(double x) {
  double clamp_low;
  std::memcpy(&clamp_low, &kClampLowBits, sizeof(clamp_low));
  const double y = std::max(1.0 - x, clamp_low), z = std::max(x, clamp_low);
  uint64_t ybits, zbits;
  std::memcpy(&ybits, &y, sizeof(ybits));
  std::memcpy(&zbits, &z, sizeof(zbits));
  const int64_t near_one = kNearOneBase + static_cast<int64_t>(ybits >> kShift);
  const int64_t below_half = kBelowHalfBase - static_cast<int64_t>(zbits >> kShift);
  return static_cast<int>((x >= 0.5 ? near_one : below_half) & 0xFFFF);
}
static_assert(kSecondGroup + static_cast<int>(((kHalf >> kShift) - 1) - (kFloor >> kShift)) < kLast,
              "the buckets of x in [2^-17, 1/2) end before the last bucket");
static_assert(kBelowHalfBase - static_cast<int64_t>(kClampLowBits >> kShift) == kLast,
              "x below 2^-17 takes the last bucket");
static_assert(kNearOneBase + static_cast<int64_t>(kClampLowBits >> kShift) == 0,
              "1 - x below 2^-17 takes bucket 0");

// Every value's bucket into bucket[0, n); returns whether some value is outside [+0, 1] (a
// NaN, a negative or negative zero, or above 1: its pattern is above kOne's).
bool Buckets(const double* x, size_t n, uint16_t* bucket) {
  size_t i = 0;
  int bad = 0;
#if defined(__SSE2__)
  double clamp_low_d;
  std::memcpy(&clamp_low_d, &kClampLowBits, sizeof(clamp_low_d));
  const __m128d one = _mm_set1_pd(1.0), half = _mm_set1_pd(0.5), clamp_low = _mm_set1_pd(clamp_low_d);
  const __m128i near_base = _mm_set1_epi64x(kNearOneBase), below_base = _mm_set1_epi64x(kBelowHalfBase);
  for (; i + 2 <= n; i += 2) {
    const __m128d v = _mm_loadu_pd(x + i);
    bad |= _mm_movemask_pd(_mm_cmpnle_pd(v, one)) | _mm_movemask_pd(v);
    const __m128i ybits = _mm_castpd_si128(_mm_max_pd(_mm_sub_pd(one, v), clamp_low));
    const __m128i zbits = _mm_castpd_si128(_mm_max_pd(v, clamp_low));
    const __m128i near_one = _mm_add_epi64(near_base, _mm_srli_epi64(ybits, kShift));
    const __m128i below_half = _mm_sub_epi64(below_base, _mm_srli_epi64(zbits, kShift));
    const __m128i mask = _mm_castpd_si128(_mm_cmpge_pd(v, half));
    const __m128i b = _mm_or_si128(_mm_and_si128(mask, near_one), _mm_andnot_si128(mask, below_half));
    bucket[i] = static_cast<uint16_t>(_mm_cvtsi128_si32(b));
    bucket[i + 1] = static_cast<uint16_t>(_mm_cvtsi128_si32(_mm_unpackhi_epi64(b, b)));
  }
#endif
  for (; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    bad |= bits > kOne;
    bucket[i] = static_cast<uint16_t>(BucketOf(x[i]));
  }
  return bad != 0;
}

}  // namespace

void SortScoresDescending(std::vector<double>* v, ScoreSortScratch* scratch) {
  const size_t n = v->size();
  // Below a few hundred scores the bucket passes cost more than std::sort (a Vidur trace's
  // steps: tens of drafts over many octaves). An index must fit the keys' low 16 bits.
  if (n < kMinBucketed || n > kMaxBucketed) {
    std::sort(v->begin(), v->end(), std::greater<double>());
    return;
  }
  const double* x = v->data();
  ScoreSortScratch& s = *scratch;
  s.bucket.resize(n);
  s.keys.resize(n);
  s.keys_lo.resize(n);
  s.out.resize(n);
  uint16_t* bucket = s.bucket.data();
  int32_t* low = s.low.data();
  int32_t* high = s.high.data();
  int32_t* high4 = s.high4.data();
  // Each value's bucket; patterns of [+0, 1] are [0, kOne]: anything else takes std::sort.
  if (Buckets(x, n, bucket)) {
    std::sort(v->begin(), v->end(), std::greater<double>());
    return;
  }
  // Counting pass: the counts of the buckets' two bytes (the high byte's in four interleaved
  // copies: there are few high bytes, and consecutive values often share one); the keys.
  std::fill(s.low.begin(), s.low.end(), 0);
  std::fill(s.high4.begin(), s.high4.end(), 0);
  uint32_t* keys = s.keys.data();
#pragma GCC unroll 4
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = bucket[i];
    keys[i] = b << 16 | static_cast<uint32_t>(i);
    ++low[b & 0xFF];
    ++high4[(b >> 8) * 4 + static_cast<int>(i & 3)];
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
  // Two stable scatters of the keys, by the bucket's low byte then its high byte: bucket
  // order, each bucket in input order.
  uint32_t* keys_lo = s.keys_lo.data();
#pragma GCC unroll 4
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = keys[i];
    keys_lo[low[(key >> 16) & 0xFF]++] = key;
  }
#pragma GCC unroll 4
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = keys_lo[i];
    keys[high[key >> 24]++] = key;
  }
  // The values in that order. Every value is in [+0, 1], where doubles order as their
  // patterns and equal values are the same double.
  double* out = s.out.data();
#pragma GCC unroll 4
  for (size_t i = 0; i < n; ++i) out[i] = x[keys[i] & 0xFFFFu];
  // The last bucket (may be large) by std::sort; the others are short: an insertion pass inside
  // each run of one bucket (every key of an earlier bucket is larger).
  size_t end = n;
  while (end > 0 && (keys[end - 1] >> 16) == static_cast<uint32_t>(kLast)) --end;
  std::sort(out + end, out + n, std::greater<double>());
  for (size_t i = 1; i < end; ++i) {
    const uint32_t b = keys[i] >> 16;
    if (b != keys[i - 1] >> 16) continue;
    const double key = out[i];
    size_t j = i;
    while (j > 0 && (keys[j - 1] >> 16) == b && out[j - 1] < key) {
      out[j] = out[j - 1];
      --j;
    }
    out[j] = key;
  }
  v->swap(s.out);
}

}  // namespace dspark::sim
