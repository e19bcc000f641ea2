// The exact descending sort of the adaptive budget's survival scores (ComputeDraftBudget),
// faster than std::sort for its inputs: a step's 256 x 5 float64 scores in [0, 1].
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace dspark::sim {

// Reused between calls so that a step allocates nothing.
struct ScoreSortScratch {
  static constexpr int kMantissaBits = 10;  // 1024 buckets per octave
  static constexpr int kOctaves = 16;       // of 1 - x above 1/2 and of x below it
  static constexpr int kBuckets = 2 * kOctaves * (1 << kMantissaBits) + 3;  // < 2^16
  static constexpr int kHighDigits = ((kBuckets - 1) >> 8) + 1;  // buckets' high bytes
  std::vector<uint16_t> bucket;                         // [n] each value's bucket
  std::vector<uint32_t> keys, keys_lo;                  // [n] bucket << 16 | index, per pass
  std::vector<double> out;                              // [n] the sorted values (then swapped)
  std::array<int32_t, 256> low{};                       // low-byte counts, then offsets
  std::array<int32_t, kHighDigits> high{};              // high-byte counts, then offsets
  std::array<int32_t, 4 * kHighDigits> high4{};         // high-byte counts by i mod 4
};

// Sorts `v` descending: the sequence std::sort(v, std::greater<double>()) gives (equal values
// are the same double, so their order cannot show). For 512 or more values in [0, 1] (not
// NaN, no negative zero) a bucket sort and an insertion pass inside the buckets. The buckets
// follow the confidences' products, which crowd near 1 as much as near 0: a value x >= 1/2 is
// bucketed by 1 - x (exact there), the top 10 mantissa bits of each of its 16 octaves below
// 1/2, x < 1/2 by x the same way; what is closer to 1 than 2^-17 shares the first bucket, what
// is below 2^-17 the last (ordered by std::sort). The buckets (16 bits) are sorted by two
// stable counting passes of a byte each (least significant first), on 32-bit keys that hold
// a value's bucket and its index (so a pass moves 4 bytes, not a bucket and a double; the
// values are gathered once at the end). Any other input, and more than 65,536 values, takes
// std::sort. `v`'s buffer may be swapped with the scratch's.
void SortScoresDescending(std::vector<double>* v, ScoreSortScratch* scratch);

}  // namespace dspark::sim
