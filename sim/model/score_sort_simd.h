// The score sort's one fast path: every value's bucket (score_sort.h says which bucket a value
// falls in).
//
//   ScoreBucket        one value's bucket (the definition);
//   ScoreBucketsPlain  every value's, one after the other;
//   ScoreBuckets       the same two values at a time with SSE2 where the compiler targets it,
//                      else the plain form.
// ScoreBuckets gives ScoreBucketsPlain's buckets and verdict bit for bit
// (tests/model/test_sim_simd.cc, random values and the buckets' edges, NaN, negatives).
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/model/score_sort.h"

namespace dspark::sim::simd {

inline constexpr int kLastScoreBucket = ScoreSortScratch::kBuckets - 1;  // x below 2^-17

// x's bucket in [0, ScoreSortScratch::kBuckets) for x in [+0, 1]; buckets ascend as values
// descend. Any other x gets some bucket in [0, 2^16).
int ScoreBucket(double x);

// Every value's bucket into bucket[0, n); returns whether some value is outside [+0, 1] (a
// NaN, a negative or negative zero, or above 1).
bool ScoreBucketsPlain(const double* x, size_t n, uint16_t* bucket);
bool ScoreBuckets(const double* x, size_t n, uint16_t* bucket);

}  // namespace dspark::sim::simd
