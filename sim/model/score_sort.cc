#include "sim/model/score_sort.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "sim/model/score_sort_simd.h"

namespace dspark::sim {
namespace {

constexpr size_t kMinBucketed = 512;
constexpr size_t kMaxBucketed = size_t{1} << 16;  // indices in the keys' low 16 bits
constexpr int kLast = simd::kLastScoreBucket;

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
  if (simd::ScoreBuckets(x, n, bucket)) {
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
