#include "sim/model/score_sort_simd.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dspark::sim::simd {
namespace {

constexpr int kShift = 52 - ScoreSortScratch::kMantissaBits;
constexpr int kLast = kLastScoreBucket;
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
static_assert(kSecondGroup + static_cast<int>(((kHalf >> kShift) - 1) - (kFloor >> kShift)) < kLast,
              "the buckets of x in [2^-17, 1/2) end before the last bucket");
static_assert(kBelowHalfBase - static_cast<int64_t>(kClampLowBits >> kShift) == kLast,
              "x below 2^-17 takes the last bucket");
static_assert(kNearOneBase + static_cast<int64_t>(kClampLowBits >> kShift) == 0,
              "1 - x below 2^-17 takes bucket 0");

}  // namespace

// max(a, b) as SSE2's maxpd takes it: b unless a > b (so b when either is a NaN).
inline double MaxPd(double a, double b) { return a > b ? a : b; }

int ScoreBucket(double x) {
  double clamp_low;
  std::memcpy(&clamp_low, &kClampLowBits, sizeof(clamp_low));
  const double y = MaxPd(1.0 - x, clamp_low), z = MaxPd(x, clamp_low);
  uint64_t ybits, zbits;
  std::memcpy(&ybits, &y, sizeof(ybits));
  std::memcpy(&zbits, &z, sizeof(zbits));
  const int64_t near_one = kNearOneBase + static_cast<int64_t>(ybits >> kShift);
  const int64_t below_half = kBelowHalfBase - static_cast<int64_t>(zbits >> kShift);
  return static_cast<int>((x >= 0.5 ? near_one : below_half) & 0xFFFF);
}

bool ScoreBucketsPlain(const double* x, size_t n, uint16_t* bucket) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    bad |= bits > kOne;  // patterns of [+0, 1] are [0, kOne]
    bucket[i] = static_cast<uint16_t>(ScoreBucket(x[i]));
  }
  return bad != 0;
}

bool ScoreBuckets(const double* x, size_t n, uint16_t* bucket) {
  size_t i = 0;
  int bad = 0;
#if defined(__SSE2__)
  // ScoreBucket on two values at a time: the same clamps, shifts and selection.
  double clamp_low_d;
  std::memcpy(&clamp_low_d, &kClampLowBits, sizeof(clamp_low_d));
  const __m128d one = _mm_set1_pd(1.0), half = _mm_set1_pd(0.5), clamp_low = _mm_set1_pd(clamp_low_d);
  const __m128i near_base = _mm_set1_epi64x(kNearOneBase), below_base = _mm_set1_epi64x(kBelowHalfBase);
  for (; i + 2 <= n; i += 2) {
    const __m128d v = _mm_loadu_pd(x + i);
    // above 1 or NaN, or the sign bit set: outside [+0, 1]
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
  return ScoreBucketsPlain(x + i, n - i, bucket + i) || bad != 0;
}

}  // namespace dspark::sim::simd
