// The drafter confidences' Beta quantile table (sim/model/beta_quantile.h) against
// boost::math::ibeta (an independent implementation of the regularized incomplete beta
// function): its CDF distance, mean and variance, the rows it refuses, and the draws' bounds.
#include <gtest/gtest.h>

#include <boost/math/special_functions/beta.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "sim/model/beta_quantile.h"

namespace dspark::sim {
namespace {

// max |F_beta(Sample(u)) - u| over u at 512 points, where float32 can tell x from 0 and 1.
double CdfDistance(const BetaQuantileTable& t, int32_t row, float w, double a, double b) {
  double worst = 0.0;
  for (int i = 0; i < 512; ++i) {
    const uint32_t u = static_cast<uint32_t>((static_cast<uint64_t>(2 * i + 1) << 32) / 1024);
    const float x = t.Sample(row, w, u);
    if (x <= 1e-30f || x >= 1.0f - 1e-6f) continue;
    const double f = boost::math::ibeta(a, b, static_cast<double>(x));
    worst = std::max(worst, std::fabs(f - u * 0x1.0p-32));
  }
  return worst;
}

TEST(BetaQuantileTable, CdfMeanAndVarianceMatchBeta) {
  for (double kappa : {1.0, 2.0, 8.0}) {
    BetaQuantileTable table(kappa);
    for (double p : {0.05, 0.3, 0.5, 0.642, 0.7, 0.802, 0.93, 0.9866}) {
      int32_t row = -1;
      float w = 0;
      ASSERT_TRUE(table.Locate(p, &row, &w)) << kappa << " " << p;
      const double a = kappa * p, b = kappa * (1.0 - p);
      EXPECT_LE(CdfDistance(table, row, w, a, b), 2.5e-3) << "kappa " << kappa << " p " << p;
      // Moments of the blended piecewise-linear quantile, exactly (per cell).
      const float* r0 = table.row_nodes(row);
      const float* r1 = table.row_nodes(row + 1);
      double mean = 0, second = 0;
      for (int j = 0; j < BetaQuantileTable::kCells; ++j) {
        const double lo = r0[j] + w * (r1[j] - r0[j]), hi = r0[j + 1] + w * (r1[j + 1] - r0[j + 1]);
        mean += 0.5 * (lo + hi);
        second += (lo * lo + lo * hi + hi * hi) / 3.0;
      }
      mean /= BetaQuantileTable::kCells;
      second /= BetaQuantileTable::kCells;
      EXPECT_NEAR(mean, p, 2e-6) << "kappa " << kappa << " p " << p;
      const double var = p * (1.0 - p) / (kappa + 1.0);
      EXPECT_NEAR((second - mean * mean) / var, 1.0, 0.01) << "kappa " << kappa << " p " << p;
    }
  }
}

// A draw from the interleaved row pair is the draw from the two rows, to the bit, on every
// cell's ends and random uniforms.
TEST(BetaQuantileTable, PairDrawsEqualRowDraws) {
  BetaQuantileTable table(2.0);
  std::mt19937_64 rng(5);
  for (double p : {0.05, 0.3, 0.5, 0.642, 0.7, 0.802, 0.93, 0.9866}) {
    int32_t row = -1;
    float w = 0;
    ASSERT_TRUE(table.Locate(p, &row, &w));
    const float* pair = table.pair_nodes(row);
    for (int i = 0; i < 20000; ++i) {
      uint32_t u = static_cast<uint32_t>(rng());
      if (i < 2 * BetaQuantileTable::kCells)  // each cell's first and last uniform
        u = (static_cast<uint32_t>(i / 2) << (32 - BetaQuantileTable::kCellsLog2)) |
            (i % 2 == 0 ? 0u : (1u << (32 - BetaQuantileTable::kCellsLog2)) - 1);
      const float want = table.Sample(row, w, u), got = BetaQuantileTable::SamplePair(pair, w, u);
      ASSERT_EQ(std::memcmp(&want, &got, sizeof(float)), 0) << p << " " << u;
    }
  }
}

TEST(BetaQuantileTable, RowsAreExactQuantilesAtTheirNodes) {
  BetaQuantileTable table(2.0);
  int32_t row = -1;
  float w = 0;
  ASSERT_TRUE(table.Locate(0.7, &row, &w));
  const double p = BetaQuantileTable::RowP(row), a = 2.0 * p, b = 2.0 * (1.0 - p);
  const float* nodes = table.row_nodes(row);
  for (int j = 16; j < BetaQuantileTable::kCells; j += 64)
    EXPECT_NEAR(boost::math::ibeta(a, b, static_cast<double>(nodes[j])),
                static_cast<double>(j) / BetaQuantileTable::kCells, 2e-6)
        << j;
}

TEST(BetaQuantileTable, RefusesWhatItCannotHold) {
  BetaQuantileTable table(2.0);
  int32_t row = 0;
  float w = 0;
  EXPECT_FALSE(table.Locate(0.0, &row, &w));
  EXPECT_FALSE(table.Locate(1.0, &row, &w));
  EXPECT_FALSE(table.Locate(1e-6, &row, &w));        // logit below -8
  EXPECT_FALSE(table.Locate(1.0 - 1e-6, &row, &w));  // above 8
  EXPECT_FALSE(table.Locate(0.999, &row, &w));       // tabled, but its end cells miss the bounds
  EXPECT_FALSE(table.Locate(std::nan(""), &row, &w));
  EXPECT_TRUE(table.Locate(0.9866, &row, &w));
}

TEST(BetaQuantileTable, DrawsStayInTheUnitIntervalAndAscendInU) {
  BetaQuantileTable table(2.0);
  int32_t row = 0;
  float w = 0;
  ASSERT_TRUE(table.Locate(0.802, &row, &w));
  float last = 0.0f;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 0x10001ull) {
    const float q = table.Sample(row, w, static_cast<uint32_t>(u));
    ASSERT_GE(q, 0.0f);
    ASSERT_LE(q, 1.0f);
    ASSERT_GE(q, last) << u;
    last = q;
  }
  EXPECT_EQ(table.Sample(row, w, 0xFFFFFFFFu), table.Sample(row, w, 0xFFFFFFFFu));
}

}  // namespace
}  // namespace dspark::sim
