// The exact descending sort of the adaptive budget's survival scores (ComputeDraftBudget),
// faster than std::sort for its inputs: a step's 256 x 5 float64 scores in [0, 1].
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace dspark::sim {

// Reused between calls so that a step allocates nothing.
struct ScoreSortScratch {
  static constexpr int kBuckets = 8192;  // 8 octaves below the largest score, 1024 per octave
  std::vector<uint64_t> keys;            // [n] float64 bit patterns, bucket order
  std::array<int32_t, kBuckets + 1> start{};  // zero between calls
};

// Sorts `v` descending: the sequence std::sort(v, std::greater<double>()) gives (equal values
// are the same double, so their order cannot show). For 512 or more non-negative, non-NaN
// values a
// bucket pass on the top 22 bits of the pattern (sign 0, exponent, 10 mantissa bits; patterns
// of such doubles order like their values) and an insertion pass inside the buckets; scores
// more than 8 octaves below the largest share the last bucket, ordered by std::sort. Any other
// input (fewer values, a negative zero, a negative value, a NaN) takes std::sort.
void SortScoresDescending(std::vector<double>* v, ScoreSortScratch* scratch);

}  // namespace dspark::sim
