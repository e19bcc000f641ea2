// SortScoresDescending gives std::sort's descending order on the budget's scores and on the
// inputs it hands to std::sort (tests/model/test_sim_adaptive.cc checks the budget itself).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "sim/model/score_sort.h"

namespace dspark::sim {
namespace {

// Compares bit patterns: an order std::sort would give must match to the last bit.
void ExpectSortsLikeStd(std::vector<double> v, ScoreSortScratch* scratch) {
  std::vector<double> want = v;
  std::sort(want.begin(), want.end(), std::greater<double>());
  SortScoresDescending(&v, scratch);
  ASSERT_EQ(v.size(), want.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(want[i])) continue;  // std::sort's place for a NaN: not an order to match
    ASSERT_EQ(std::memcmp(&v[i], &want[i], sizeof(double)), 0)
        << "at " << i << " of " << v.size() << ": " << v[i] << " vs " << want[i];
  }
}

// Survival scores as the budget builds them: float64 products of float32 confidences, with
// ties (1.0 of fresh requests, repeated rows), zeros and values far below the largest.
TEST(SortScoresDescending, MatchesStdSortOnSurvivalScores) {
  std::mt19937_64 rng(11);
  ScoreSortScratch scratch;
  for (int trial = 0; trial < 400; ++trial) {
    const int rows = static_cast<int>(rng() % 400), k = 1 + static_cast<int>(rng() % 8);
    const int flavour = trial % 4;
    std::vector<double> v;
    for (int r = 0; r < rows; ++r) {
      double s = 1.0;
      for (int j = 0; j < k; ++j) {
        float c = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53);
        if (flavour == 1 && rng() % 3 == 0) c = 1.0f;
        if (flavour == 2) c = static_cast<float>(std::pow(c, 8.0));  // many octaves down
        if (flavour == 3 && rng() % 5 == 0) c = 0.0f;
        s *= static_cast<double>(c);
        v.push_back(s);
      }
    }
    ExpectSortsLikeStd(v, &scratch);
  }
}

TEST(SortScoresDescending, BoundarySizesAndOtherInputs) {
  ScoreSortScratch scratch;
  ExpectSortsLikeStd({}, &scratch);
  ExpectSortsLikeStd({0.5}, &scratch);
  ExpectSortsLikeStd({0.25, 0.5}, &scratch);
  ExpectSortsLikeStd({1.0, 1.0, 1.0}, &scratch);
  const double inf = std::numeric_limits<double>::infinity();
  ExpectSortsLikeStd({3.0, inf, 0.0, 1e300, 1e-310, 7.0, 0.0}, &scratch);
  // Large enough for the bucket pass (512 values), with what it hands to std::sort: a negative
  // zero, negatives, a NaN; and the neighbours of bucket boundaries over 40 octaves.
  const auto padded = [](std::vector<double> v) {
    for (int i = 0; v.size() < 700; ++i) v.push_back(std::ldexp(1.0 + (i % 97) / 97.0, -(i % 13)));
    return v;
  };
  ExpectSortsLikeStd(padded({0.5, -0.0, 0.0, 0.25}), &scratch);
  ExpectSortsLikeStd(padded({0.5, -2.0, 3.0, -1e-9}), &scratch);
  ExpectSortsLikeStd(padded({0.5, std::nan(""), 0.25}), &scratch);
  ExpectSortsLikeStd(padded({3.0, inf, 0.0, 1e300, 1e-310, 7.0, 0.0}), &scratch);
  std::vector<double> edges;
  for (int e = 0; e < 40; ++e)
    for (int m = 0; m < 6; ++m) {
      const double edge = std::ldexp(1.0 + m / 1024.0, -e);
      for (double toward : {0.0, 4.0}) edges.push_back(std::nextafter(edge, toward));
      edges.push_back(edge);
    }
  ExpectSortsLikeStd(edges, &scratch);
  ExpectSortsLikeStd(padded(edges), &scratch);
}

// Values in [0, 1] (the bucketed path): the neighbours of every bucket boundary of 1 - x above
// 1/2 and of x below it over 40 octaves (past the 16 the buckets cover), 1, 1/2, 0, and
// confidences' products crowding near 1 (a Beta(1.6, 0.4) confidence often exceeds 0.999).
TEST(SortScoresDescending, MatchesStdSortOnBucketBoundariesInUnitInterval) {
  ScoreSortScratch scratch;
  std::vector<double> edges = {1.0, 0.5, 0.0, std::nextafter(1.0, 0.0), std::nextafter(0.5, 0.0),
                               std::nextafter(0.5, 1.0), 1e-310};
  for (int e = 1; e < 40; ++e)
    for (int m = 0; m < 6; ++m) {
      const double d = std::ldexp(1.0 + m / 128.0, -e);
      for (double edge : {d, 1.0 - d})
        if (edge >= 0.0 && edge <= 1.0)
          for (double toward : {0.0, 1.0}) {
            edges.push_back(std::nextafter(edge, toward));
            edges.push_back(edge);
          }
    }
  ExpectSortsLikeStd(edges, &scratch);
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> v = edges;
    for (int i = 0; i < 1280; ++i) {
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      v.push_back(trial % 2 ? 1.0 - std::pow(u, 8.0) * 1e-3 : static_cast<double>(static_cast<float>(u)));
    }
    ExpectSortsLikeStd(v, &scratch);
  }
}

// The buckets are 1024 per octave, sorted by their low byte then their high byte: the
// neighbours of every bucket boundary of the top octaves (both sides of 1/2), of the 256-bucket
// steps of the high byte, and runs of values in one bucket in random input order.
TEST(SortScoresDescending, MatchesStdSortOnFineBucketsAndByteBoundaries) {
  ScoreSortScratch scratch;
  std::vector<double> edges;
  for (int e = 1; e <= 3; ++e)
    for (int m = 0; m < 1024; ++m) {
      const double d = std::ldexp(1.0 + m / 1024.0, -e);
      for (double edge : {d, 1.0 - d})
        if (edge >= 0.0 && edge <= 1.0) {
          edges.push_back(std::nextafter(edge, 0.0));
          edges.push_back(edge);
        }
    }
  ExpectSortsLikeStd(edges, &scratch);
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<double> v;
    const double centre = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    for (int i = 0; i < 900; ++i) {
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      // Crowds around one value (many per bucket), a spread, and exact repeats.
      double x = trial % 3 == 0 ? centre * (1.0 + 1e-4 * u) : u;
      if (trial % 3 == 2 && i % 4 == 0) x = centre;
      v.push_back(std::min(1.0, x));
    }
    std::shuffle(v.begin(), v.end(), rng);
    ExpectSortsLikeStd(v, &scratch);
  }
}

}  // namespace
}  // namespace dspark::sim
