// The models' SIMD fast paths against their plain forms, bit for bit: random inputs from a
// fixed seed and the edge cases each fast path handles differently from a loop (NaN, signed
// zeros, values outside the range, odd lengths, masked lanes). Where the compiler targets no
// SIMD the fast form is the plain one and these tests hold trivially.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "sim/model/acceptance_simd.h"
#include "sim/model/adaptive_simd.h"
#include "sim/model/beta_quantile.h"
#include "sim/model/score_sort_simd.h"

namespace dspark::sim {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

double Unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// A row pair's interleaved nodes (2 * (kCells + 1) floats), as SamplePair reads them.
constexpr size_t kPairNodes = 2 * (BetaQuantileTable::kCells + 1);

float EdgeFloat(std::mt19937_64& rng) {
  const float edges[] = {0.0f, -0.0f, 1.0f, -1e-30f, 1.0f + 1e-7f, 2.0f, -2.0f,
                         std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::denorm_min(), 0.5f, std::nextafter(1.0f, 0.0f)};
  return edges[rng() % (sizeof(edges) / sizeof(edges[0]))];
}

uint64_t EdgeWord(std::mt19937_64& rng) {
  // The cell (top 10 bits), the fraction (next 22) and the outcome's half (low 32) at their ends.
  const uint64_t hi[] = {0u, 0xFFFFFFFFu, 0x003FFFFFu, 0xFFC00000u, 0x80000000u, static_cast<uint32_t>(rng())};
  const uint64_t lo[] = {0u, 0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu, 1u, static_cast<uint32_t>(rng())};
  return hi[rng() % 6] << 32 | lo[rng() % 6];
}

void ExpectQuadsAgree(const float* const* nodes, const float* weight, const uint64_t* bits, const char* what,
                      int trial) {
  float fast[4], plain[4];
  const uint32_t a = simd::DrawTabledQuad(nodes, weight, bits, fast);
  const uint32_t b = simd::DrawTabledQuadPlain(nodes, weight, bits, plain);
  ASSERT_EQ(a, b) << what << " trial " << trial;
  // Bit for bit, but a NaN (edge nodes and weights make some) only as a NaN: its sign bit is
  // the compiler's choice at each optimisation level (the sanitizer build flips it).
  for (int i = 0; i < 4; ++i) {
    if (std::isnan(fast[i]) && std::isnan(plain[i])) continue;
    ASSERT_EQ(Bits(fast[i]), Bits(plain[i])) << what << " trial " << trial << " position " << i;
  }
}

TEST(SimdPaths, DrawTabledQuadEqualsPlainOnTableRows) {
  std::mt19937_64 rng(31);
  for (double kappa : {0.5, 2.0, 8.0}) {
    BetaQuantileTable table(kappa);
    for (int trial = 0; trial < 4000; ++trial) {
      const float* nodes[4];
      float weight[4];
      alignas(16) uint64_t bits[4];
      for (int i = 0; i < 4; ++i) {
        int32_t row = 0;
        while (!table.Locate(0.02 + 0.97 * Unit(rng), &row, &weight[i])) {
        }
        nodes[i] = table.pair_nodes(row);
        bits[i] = trial % 4 == 0 ? EdgeWord(rng) : rng();
      }
      ExpectQuadsAgree(nodes, weight, bits, "table", trial);
    }
  }
}

TEST(SimdPaths, DrawTabledQuadEqualsPlainOnEdgeNodesWeightsAndWords) {
  std::mt19937_64 rng(32);
  std::vector<std::vector<float>> pairs(4, std::vector<float>(kPairNodes));
  for (int trial = 0; trial < 20000; ++trial) {
    const float* nodes[4];
    float weight[4];
    alignas(16) uint64_t bits[4];
    for (int i = 0; i < 4; ++i) {
      std::vector<float>& pair = pairs[static_cast<size_t>(i)];
      bits[i] = trial % 2 ? EdgeWord(rng) : rng();
      // The four nodes the word's cell reads: in [0, 1], outside it, or an edge value.
      const size_t cell = static_cast<size_t>(bits[i] >> (32 + 32 - BetaQuantileTable::kCellsLog2));
      for (size_t j = 0; j < 4; ++j)
        pair[2 * cell + j] = rng() % 4 == 0 ? EdgeFloat(rng) : static_cast<float>(-0.25 + 1.5 * Unit(rng));
      nodes[i] = pair.data();
      weight[i] = rng() % 4 == 0 ? EdgeFloat(rng) : static_cast<float>(Unit(rng));
    }
    ExpectQuadsAgree(nodes, weight, bits, "edges", trial);
  }
}

void ExpectBucketsAgree(const std::vector<double>& x, const char* what) {
  std::vector<uint16_t> fast(x.size() + 1, 0xABCD), plain(x.size() + 1, 0xABCD);
  const bool a = simd::ScoreBuckets(x.data(), x.size(), fast.data());
  const bool b = simd::ScoreBucketsPlain(x.data(), x.size(), plain.data());
  ASSERT_EQ(a, b) << what << " n=" << x.size();
  ASSERT_EQ(fast, plain) << what << " n=" << x.size();
}

TEST(SimdPaths, ScoreBucketsEqualPlain) {
  std::mt19937_64 rng(33);
  const double inf = std::numeric_limits<double>::infinity();
  // The buckets' edges: 1, 1/2, 0, 2^-17 and the 1024-per-octave boundaries of x and 1 - x,
  // with their neighbours; and every value the fast path must call outside [+0, 1].
  std::vector<double> edges = {1.0, 0.5, 0.0, std::ldexp(1.0, -17), 1e-310, std::nextafter(1.0, 0.0),
                               std::nextafter(0.5, 0.0), std::nextafter(0.5, 1.0)};
  for (int e = 1; e < 40; ++e)
    for (int m = 0; m < 8; ++m) {
      const double d = std::ldexp(1.0 + m / 1024.0, -e);
      for (double edge : {d, 1.0 - d})
        for (double toward : {0.0, 1.0}) {
          edges.push_back(edge);
          edges.push_back(std::nextafter(edge, toward));
        }
    }
  ExpectBucketsAgree(edges, "edges");
  const double outside[] = {-0.0, -1.0, -1e-300, 1.0 + 1e-15, 2.0, inf, -inf, std::nan(""), -std::nan("")};
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t n = static_cast<size_t>(rng() % 70);  // odd and even lengths, 0 and 1
    std::vector<double> x(n);
    for (double& v : x) {
      const uint64_t kind = rng() % 8;
      v = kind == 0   ? edges[rng() % edges.size()]
          : kind == 1 ? 1.0 - std::pow(Unit(rng), 8.0) * 1e-3       // crowding near 1
          : kind == 2 ? std::pow(Unit(rng), 12.0)                   // many octaves down
                      : Unit(rng);
    }
    if (trial % 5 == 0 && n > 0) x[rng() % n] = outside[rng() % (sizeof(outside) / sizeof(outside[0]))];
    ExpectBucketsAgree(x, "random");
  }
}

// Rows of buckets as TopBAllocator::Allocate leaves them before its second pass: each slot's
// bucket in [0, 4096) or -1 (ineligible), the padding after the last row.
TEST(SimdPaths, ScanBoundaryRowsEqualsPlain) {
  std::mt19937_64 rng(34);
  constexpr int kBuckets = 4096;
  int cases = 0;
  for (int32_t max_k : {1, 2, 3, 5, 7, 8, 9, 12}) {  // past 8 the fast form is the plain one
    for (int trial = 0; trial < 300; ++trial, ++cases) {
      const int32_t rows = static_cast<int32_t>(rng() % 300);
      const int32_t slots = rows * max_k;
      std::vector<int16_t> bucket(static_cast<size_t>(slots) + simd::kBucketRowPad);
      // Few distinct buckets (ties at the boundary) or the whole range.
      const int spread = trial % 3 == 0 ? 4 : kBuckets;
      const int low = static_cast<int>(rng() % (kBuckets - spread + 1));
      for (int16_t& b : bucket) b = static_cast<int16_t>(low + static_cast<int>(rng() % spread));
      for (int32_t r = 0; r < rows; ++r) {
        const int32_t eligible = static_cast<int32_t>(rng() % static_cast<uint64_t>(max_k + 1));
        for (int32_t k = eligible; k < max_k; ++k) bucket[static_cast<size_t>(r * max_k + k)] = -1;
      }
      // The boundary: a slot's bucket, the lowest, the highest, or one no slot has.
      const uint64_t pick = rng() % 4;
      const int32_t boundary = pick == 0 && slots > 0 ? bucket[rng() % static_cast<uint64_t>(slots)]
                               : pick == 1            ? 0
                               : pick == 2            ? kBuckets - 1
                                                      : static_cast<int32_t>(rng() % kBuckets);
      std::vector<int32_t> count_fast(kBuckets + 1), count_plain;
      for (int32_t& c : count_fast) c = static_cast<int32_t>(rng() % 1000);
      count_plain = count_fast;
      std::vector<int32_t> kept_fast(static_cast<size_t>(rows), -99), kept_plain = kept_fast;
      std::vector<int32_t> in_fast(static_cast<size_t>(slots), -99), in_plain = in_fast;
      const int32_t m_fast = simd::ScanBoundaryRows(bucket.data(), rows, max_k, boundary, count_fast.data(),
                                                    kept_fast.data(), in_fast.data());
      const int32_t m_plain = simd::ScanBoundaryRowsPlain(bucket.data(), rows, max_k, boundary,
                                                          count_plain.data(), kept_plain.data(), in_plain.data());
      const auto where = [&] { return ::testing::Message() << "max_k " << max_k << " trial " << trial; };
      ASSERT_EQ(m_fast, m_plain) << where();
      ASSERT_EQ(kept_fast, kept_plain) << where();
      ASSERT_TRUE(std::equal(in_fast.begin(), in_fast.begin() + m_fast, in_plain.begin())) << where();
      ASSERT_EQ(count_fast, count_plain) << where();
    }
  }
  EXPECT_EQ(cases, 8 * 300);
}

}  // namespace
}  // namespace dspark::sim
