// The simulator's fast top-B allocation must equal the kernel body (CPU emulation) and the
// reference slot for slot, because the simulator plans steps with it; and the host budget
// policy's contract.
#include <gtest/gtest.h>

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
        default: conf[k] = 0.001f + 0.998f * static_cast<float>((rng() >> 40) * 0x1.0p-24);
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

INSTANTIATE_TEST_SUITE_P(Scores, FastAllocatorIdentity, ::testing::Values(0, 1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == 0   ? "distinct"
                                              : info.param == 1 ? "heavy_ties"
                                                                : "confidence_products");
                         });

TEST(PickDraftBudget, FlatCostKeepsEverythingAndSteepCostKeepsNothing) {
  const std::vector<float> scores = {0.9f, 0.5f, 0.2f, 0.8f, 0.1f, 0.05f};
  const std::vector<int32_t> max_drafts = {3, 3};
  EXPECT_EQ(PickDraftBudget(scores.data(), max_drafts.data(), 2, 3, 6, [](int32_t) { return 100.0; }), 6);
  EXPECT_EQ(PickDraftBudget(scores.data(), max_drafts.data(), 2, 3, 6,
                            [](int32_t b) { return 100.0 + 1e6 * b; }),
            0);
  // The cap wins over a flat cost.
  EXPECT_EQ(PickDraftBudget(scores.data(), max_drafts.data(), 2, 3, 4, [](int32_t) { return 1.0; }), 4);
}

TEST(PickDraftBudget, KeepsDraftsWorthTheirMarginalCost) {
  // Two decodes; cost 100 + 10 per draft. A draft with score s is worth keeping while
  // (2 + E + s) / (100 + 10 (B + 1)) > (2 + E) / (100 + 10 B).
  const std::vector<float> scores = {0.95f, 0.9f, 0.02f, 0.93f, 0.85f, 0.01f};
  const std::vector<int32_t> max_drafts = {3, 3};
  const int32_t b = PickDraftBudget(scores.data(), max_drafts.data(), 2, 3, 6,
                                    [](int32_t n) { return 100.0 + 10.0 * n; });
  EXPECT_EQ(b, 4);
}

TEST(PickDraftBudget, GrowsIntoFreePaddingTokens) {
  // Cost is a step function of the padded size (multiples of 6 tokens with 2 decodes).
  const std::vector<float> scores = {0.9f, 0.001f, 0.0005f, 0.9f, 0.001f, 0.0005f};
  const std::vector<int32_t> max_drafts = {3, 3};
  auto padded_cost = [](int32_t b) { return 100.0 + 50.0 * ((2 + b + 5) / 6); };
  const int32_t b = PickDraftBudget(scores.data(), max_drafts.data(), 2, 3, 6, padded_cost);
  // Only the two good drafts are worth a candidate (B = 2, 4 tokens of a 6-token size); the
  // 2 slots left in that size cost nothing, so B grows to 4, and not into the next size.
  EXPECT_EQ(b, 4);
}

}  // namespace
}  // namespace dspark::sim
