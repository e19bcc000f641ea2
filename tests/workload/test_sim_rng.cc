// The project's own draws: reproducible streams and the right moments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "sim/workload/rng.h"

namespace dspark::sim {
namespace {

TEST(Rng, SameSeedSameStreamDifferentStreamsDiffer) {
  Rng a(42, RngStream::kArrivals), b(42, RngStream::kArrivals), c(42, RngStream::kLengths),
      d(43, RngStream::kArrivals);
  int same_c = 0, same_d = 0;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    same_c += x == c.NextU64();
    same_d += x == d.NextU64();
  }
  EXPECT_EQ(same_c, 0);
  EXPECT_EQ(same_d, 0);
}

TEST(Rng, MatchesTheStandardEngineBitForBit) {
  // Uniform() is documented as the top 53 bits of one mt19937_64 output.
  Rng rng(7);
  std::mt19937_64 engine(7);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(rng.Uniform(), static_cast<double>(engine() >> 11) * 0x1.0p-53);
}

// The engine (sim/workload/mt19937_64.h) is std::mt19937_64's stream word for word, across
// many state refills and seeds at the edges of the seed range.
TEST(Rng, EngineEqualsStdMt19937_64AcrossRefills) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{5489}, uint64_t{42},
                        ~uint64_t{0}, SplitMix64(3), uint64_t{1} << 63}) {
    Mt19937_64 ours(seed);
    std::mt19937_64 want(seed);
    for (int i = 0; i < 20 * 312 + 7; ++i) ASSERT_EQ(ours(), want()) << "seed " << seed << " draw " << i;
  }
}

// Fill (Rng::NextU64s) hands out the words the calls would, in runs of every length that
// cross the state refills, mixed with single calls.
TEST(Rng, FillEqualsSingleCalls) {
  Rng pick(11);
  Mt19937_64 ours(77);
  std::mt19937_64 want(77);
  std::vector<uint64_t> run(2 * Mt19937_64::kN + 3);
  for (int i = 0; i < 400; ++i) {
    const size_t n = static_cast<size_t>(pick.UniformInt(run.size() + 1));
    ours.Fill(run.data(), n);
    for (size_t j = 0; j < n; ++j) ASSERT_EQ(run[j], want()) << "run " << i << " word " << j;
    ASSERT_EQ(ours(), want()) << "after run " << i;
  }
}

// Gamma from prepared constants is the recursive formula's draw, value for value and in the
// same stream order: Marsaglia-Tsang at shape (+ 1 below 1), then U^(1/shape) drawn after it.
double FormulaGamma(Rng& rng, double shape, double scale) {
  if (shape < 1.0) {
    const double g = FormulaGamma(rng, shape + 1.0, scale);
    return g * std::pow(rng.UniformOpen(), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng.Normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = rng.UniformOpen();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

TEST(Rng, PreparedGammaIsTheFormulasDrawAndStream) {
  Rng a(9), b(9);
  for (double shape : {0.0, 1e-3, 0.4, 0.999, 1.0, 1.6, 2.0, 7.5}) {
    const Rng::GammaShape g = Rng::GammaShape::For(shape);
    for (int i = 0; i < 2000; ++i) {
      const double want = FormulaGamma(a, shape, 1.0), got = b.Gamma(g, 1.0);
      ASSERT_EQ(std::memcmp(&want, &got, sizeof(double)), 0) << "shape " << shape << " draw " << i;
    }
    ASSERT_EQ(a.NextU64(), b.NextU64()) << "shape " << shape;
  }
}

TEST(Rng, UniformRangesAndUniformIntCoverage) {
  Rng rng(1);
  std::vector<int> hits(7, 0);
  for (int i = 0; i < 70000; ++i) {
    const double u = rng.Uniform(), o = rng.UniformOpen();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ASSERT_GT(o, 0.0);
    ASSERT_LT(o, 1.0);
    const uint64_t k = rng.UniformInt(7);
    ASSERT_LT(k, 7u);
    ++hits[k];
  }
  for (int h : hits) EXPECT_NEAR(h, 10000, 500);
}

struct Moments {
  double mean = 0, var = 0;
};

template <class Draw>
Moments Sample(Draw draw, int n) {
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = draw();
    s += x;
    s2 += x * x;
  }
  Moments m;
  m.mean = s / n;
  m.var = s2 / n - m.mean * m.mean;
  return m;
}

TEST(Rng, ExponentialNormalGammaMoments) {
  Rng rng(2024);
  const int n = 200000;
  const Moments e = Sample([&] { return rng.Exponential(4.0); }, n);
  EXPECT_NEAR(e.mean, 0.25, 0.005);
  EXPECT_NEAR(e.var, 0.0625, 0.003);
  const Moments z = Sample([&] { return rng.Normal(); }, n);
  EXPECT_NEAR(z.mean, 0.0, 0.01);
  EXPECT_NEAR(z.var, 1.0, 0.02);
  for (double shape : {0.3, 1.0, 2.5, 9.0}) {
    const double scale = 1.7;
    const Moments g = Sample([&] { return rng.Gamma(shape, scale); }, n);
    EXPECT_NEAR(g.mean, shape * scale, 0.02 * shape * scale) << "shape " << shape;
    EXPECT_NEAR(g.var, shape * scale * scale, 0.05 * shape * scale * scale) << "shape " << shape;
  }
}

TEST(Rng, UniformPair32HalvesAreIndependentUniforms) {
  Rng rng(5);
  double sa = 0, sb = 0, sab = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    double a, b;
    rng.UniformPair32(&a, &b);
    ASSERT_LT(a, 1.0);
    ASSERT_LT(b, 1.0);
    sa += a;
    sb += b;
    sab += a * b;
  }
  EXPECT_NEAR(sa / n, 0.5, 0.005);
  EXPECT_NEAR(sb / n, 0.5, 0.005);
  EXPECT_NEAR(sab / n - (sa / n) * (sb / n), 0.0, 0.002);
}

}  // namespace
}  // namespace dspark::sim
