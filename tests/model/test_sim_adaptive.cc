// The simulator's fast top-B allocation must equal the kernel body (CPU emulation) and the
// reference slot for slot, because the simulator plans steps with it; and the host budget
// policy's contract.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/reference/topb_alloc.h"
#include "kernels/topb_alloc.cuh"
#include "sim/model/adaptive.h"

namespace dspark::sim {
namespace {

TEST(SurvivalScores, ProductsInFloat32AreNonIncreasing) {
  const float conf[5] = {0.9f, 1.0f, 0.5f, 0.999f, 0.001f};
  float out[5];
  SurvivalScores(conf, 5, out);
  float expect = 1.0f;
  for (int k = 0; k < 5; ++k) {
    expect *= conf[k];
    EXPECT_EQ(out[k], expect);
    if (k > 0) EXPECT_LE(out[k], out[k - 1]);
  }
}

struct Trial {
  std::vector<float> scores;
  std::vector<int32_t> max_drafts;
  int32_t max_k;
  int32_t budget;
};

Trial MakeTrial(std::mt19937_64& rng, int32_t nd, int32_t max_k, int mode) {
  Trial t{std::vector<float>(static_cast<size_t>(nd) * max_k), std::vector<int32_t>(nd), max_k, 0};
  std::vector<float> conf(max_k);
  for (int32_t r = 0; r < nd; ++r) {
    t.max_drafts[r] = static_cast<int32_t>(rng() % static_cast<uint64_t>(max_k + 1));
    for (int32_t k = 0; k < max_k; ++k) {
      switch (mode) {
        case 0: conf[k] = static_cast<float>((rng() >> 11) * 0x1.0p-53); break;  // distinct
        case 1: conf[k] = 0.25f * static_cast<float>(1 + rng() % 4); break;      // many ties
        case 2: conf[k] = 0.001f + 0.998f * static_cast<float>((rng() >> 40) * 0x1.0p-24); break;
        default:  // products far below 2^-31 (the allocator's lowest bucket holds them all), zeros
          conf[k] = rng() % 5 == 0 ? 0.0f
                                   : static_cast<float>(std::pow((rng() >> 11) * 0x1.0p-53, 12.0));
      }
    }
    SurvivalScores(conf.data(), max_k, &t.scores[static_cast<size_t>(r) * max_k]);
  }
  int32_t eligible = 0;
  for (int32_t d : t.max_drafts) eligible += d;
  t.budget = static_cast<int32_t>(rng() % static_cast<uint64_t>(eligible + 3));
  return t;
}

class FastAllocatorIdentity : public ::testing::TestWithParam<int> {};

TEST_P(FastAllocatorIdentity, EqualsEmulatedKernelAndReference) {
  const int mode = GetParam();
  std::mt19937_64 rng(77 + mode);
  TopBAllocator allocator(8 * 1024);
  int cases = 0;
  for (int32_t nd : {0, 1, 2, 3, 7, 17, 65, 256, 257, 1024}) {
    for (int32_t max_k : {1, 3, 5, 8}) {
      if (nd * max_k > kTopBMaxSlots) continue;
      for (int trial = 0; trial < 25; ++trial, ++cases) {
        const Trial t = MakeTrial(rng, nd, max_k, mode);
        std::vector<int32_t> fast(nd, -99);
        const int32_t total = allocator.Allocate(t.scores.data(), t.max_drafts.data(), nd, max_k,
                                                 t.budget, fast.data());
        std::vector<int32_t> qsl(nd + 1, -99), kept(nd, -99);
        TopBAllocParams p{t.scores.data(), t.max_drafts.data(), nullptr, qsl.data(), kept.data(),
                          nd, nd, max_k, t.budget, 1};
        EmulateTopBAlloc(p);
        const ref::TopBAllocation want = ref::TopBAlloc(t.scores, t.max_drafts, max_k, t.budget, 1, {});
        ASSERT_EQ(fast, kept) << "nd=" << nd << " k=" << max_k << " trial=" << trial;
        ASSERT_EQ(fast, want.kept) << "nd=" << nd << " k=" << max_k << " trial=" << trial;
        int32_t sum = 0;
        for (int32_t v : fast) sum += v;
        EXPECT_EQ(total, sum);
        for (int32_t r = 0; r < nd; ++r) ASSERT_LE(fast[r], t.max_drafts[r]);
      }
    }
  }
  EXPECT_GT(cases, 900);
}

INSTANTIATE_TEST_SUITE_P(Scores, FastAllocatorIdentity, ::testing::Values(0, 1, 2, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == 0   ? "distinct"
                                              : info.param == 1 ? "heavy_ties"
                                              : info.param == 2 ? "confidence_products"
                                                                : "tiny_products");
                         });

// vLLM's build_cost_tables_from_curves by hand: running max, np.interp (flat below the first
// point), linear extrapolation past the last with the slope of the last two, floors.
TEST(BuildCostTables, RunningMaxInterpolationAndExtrapolation) {
  const CostCurve draft = {{2, 1.0}, {4, 3.0}};
  const CostCurve verify = {{2, 4.0}, {4, 2.0}, {6, 6.0}};  // 2.0 is raised to the running max 4.0
  const DraftCostTables t = BuildCostTables(draft, verify, 6, 9);
  EXPECT_EQ(t.draft_ms, (std::vector<double>{1.0, 1.0, 1.0, 2.0, 3.0, 4.0, 5.0}));
  EXPECT_EQ(t.verify_ms, (std::vector<double>{4.0, 4.0, 4.0, 4.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0}));
  // A falling extrapolation is floored: draft at 0, verify at 1e-6.
  const DraftCostTables f = BuildCostTables({{0, 1.0}, {1, 1.0}}, {{0, 0.0}}, 2, 1);
  EXPECT_EQ(f.draft_ms, (std::vector<double>{1.0, 1.0, 1.0}));
  EXPECT_EQ(f.verify_ms, (std::vector<double>{1e-6, 1e-6}));
}

TEST(CheckCostCurve, RejectsEmptyUnsortedAndNegative) {
  EXPECT_FALSE(CheckCostCurve({}, "x").ok());
  EXPECT_FALSE(CheckCostCurve({{4, 1.0}, {4, 2.0}}, "x").ok());
  EXPECT_FALSE(CheckCostCurve({{4, -1.0}}, "x").ok());
  EXPECT_TRUE(CheckCostCurve({{1, 0.5}, {8, 2.0}}, "x").ok());
}

// A flat table: step cost does not depend on b, so every valid draft is kept; a very steep
// one keeps none; ties go to the first (smallest) b.
TEST(ComputeDraftBudget, FlatKeepsEverySteepKeepsNoneTiesTakeTheFirst) {
  const std::vector<float> conf = {0.9f, 0.5f, 0.2f, 0.8f, 0.1f, 0.05f};
  const std::vector<int32_t> valid = {3, 2};
  DraftBudgetScratch scratch;
  BudgetInputs in{conf.data(), valid.data(), 2, 3, 2, 2, 2};
  const DraftCostTables flat{{1.0, 1.0, 1.0}, std::vector<double>(16, 10.0)};
  EXPECT_EQ(ComputeDraftBudget(in, flat, &scratch), 5);  // capped at the 5 valid drafts
  DraftCostTables steep{{1.0, 1.0, 1.0}, {}};
  for (int n = 0; n < 16; ++n) steep.verify_ms.push_back(n <= 2 ? 1.0 : 1e9);
  EXPECT_EQ(ComputeDraftBudget(in, steep, &scratch), 0);
  // Zero-score drafts add nothing at no cost: the first maximum is the smaller b.
  const std::vector<float> zeros = {1.0f, 0.0f, 0.0f};
  const std::vector<int32_t> three = {3};
  BudgetInputs z{zeros.data(), three.data(), 1, 3, 1, 1, 1};
  EXPECT_EQ(ComputeDraftBudget(z, flat, &scratch), 1);
}

// Scores are float64 products of the stale confidences, sorted: here
// {0.9, 0.45, 0.09, 0.8, 0.08}. With cost 10 + n per token count n and a base of 2 sampling
// requests, 2 non-draft tokens: the ratio (2 + E(b)) / (12 + b) peaks at b = 3
// (0.9 + 0.8 + 0.45: 4.15 / 15 = 0.2767 beats 4.24 / 16 = 0.265 and 3.7 / 14 = 0.264).
TEST(ComputeDraftBudget, ArgmaxOfExpectedTokensPerCost) {
  const std::vector<float> conf = {0.9f, 0.5f, 0.2f, 0.8f, 0.1f, 0.5f};
  const std::vector<int32_t> valid = {3, 2};
  DraftCostTables t{{0.0, 0.0, 0.0}, {}};
  for (int n = 0; n < 16; ++n) t.verify_ms.push_back(10.0 + n);
  DraftBudgetScratch scratch;
  EXPECT_EQ(ComputeDraftBudget({conf.data(), valid.data(), 2, 3, 2, 2, 2}, t, &scratch), 3);
  // More sampling requests raise the value of the base: then no draft is worth its cost.
  EXPECT_EQ(ComputeDraftBudget({conf.data(), valid.data(), 2, 3, 2, 40, 2}, t, &scratch), 0);
  // The draft cost is read at the request count (prefills included): a large one makes each
  // draft's marginal verify cost small, so every draft is kept.
  t.draft_ms = {0.0, 0.0, 1000.0};
  EXPECT_EQ(ComputeDraftBudget({conf.data(), valid.data(), 2, 3, 2, 2, 2}, t, &scratch), 5);
  EXPECT_EQ(ComputeDraftBudget({conf.data(), valid.data(), 2, 3, 1, 2, 2}, t, &scratch), 3);
}

TEST(EvenDraftSplit, EvenRemainderFirstCapped) {
  const std::vector<int32_t> caps = {5, 1, 5, 5};
  std::vector<int32_t> split(4);
  EvenDraftSplit(caps.data(), 4, 10, split.data());
  EXPECT_EQ(split, (std::vector<int32_t>{3, 1, 3, 3}));
  EvenDraftSplit(caps.data(), 4, 5, split.data());
  EXPECT_EQ(split, (std::vector<int32_t>{2, 1, 1, 1}));
  EvenDraftSplit(caps.data(), 4, 0, split.data());
  EXPECT_EQ(split, (std::vector<int32_t>{0, 0, 0, 0}));
}

// The closed form equals the rounds on random caps (0 to K, and some above its table), totals
// from 0 to past the caps' sum, and negative totals.
TEST(EvenDraftSplit, ClosedFormEqualsRounds) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 4000; ++trial) {
    const int32_t n = static_cast<int32_t>(rng() % 300);
    const int32_t max_cap = trial % 10 == 0 ? 40 : 1 + static_cast<int32_t>(rng() % 8);
    std::vector<int32_t> caps(n);
    int32_t sum = 0;
    for (int32_t& c : caps) sum += c = static_cast<int32_t>(rng() % static_cast<uint64_t>(max_cap + 1));
    const int32_t total = static_cast<int32_t>(rng() % static_cast<uint64_t>(sum + 5)) - (trial % 7 == 0 ? 3 : 0);
    std::vector<int32_t> want(n, -7), got(n, -9);
    EvenDraftSplitRounds(caps.data(), n, total, want.data());
    EvenDraftSplit(caps.data(), n, total, got.data());
    ASSERT_EQ(got, want) << "trial " << trial << " total " << total;
  }
}

}  // namespace
}  // namespace dspark::sim
