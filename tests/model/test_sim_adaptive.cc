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

// vLLM's build_cost_tables_from_curves by hand. At or below the capture limit a step function
// (the next profiled size's running-max cost); above it np.interp only between points above
// the limit (flat before the first of them: no blending across the limit); past the last point
// linear with the last two points' slope; floors.
TEST(BuildCostTables, StepFunctionBelowTheCaptureLimit) {
  const CostCurve draft = {{2, 1.0}, {4, 3.0}};
  const CostCurve verify = {{2, 4.0}, {4, 2.0}, {6, 6.0}, {12, 9.0}};  // 2.0 becomes the running max 4.0
  const DraftCostTables t = BuildCostTables(draft, verify, 6, 14, 6);
  // Draft: sizes 0-2 cost size 2's, 3-4 size 4's; 5 and 6 lie past the last point.
  EXPECT_EQ(t.draft_ms, (std::vector<double>{1.0, 1.0, 1.0, 3.0, 3.0, 4.0, 5.0}));
  // Verify: a step function up to 6; above it only the point 12 is past the limit, so 7-12
  // cost 9 (not a blend of 6 and 9); 13 and 14 extrapolate with slope (9 - 6) / (12 - 6).
  EXPECT_EQ(t.verify_ms, (std::vector<double>{4, 4, 4, 4, 4, 6, 6, 9, 9, 9, 9, 9, 9, 9.5, 10}));
}

TEST(BuildCostTables, InterpolatesOnlyBetweenPointsAboveTheLimit) {
  const CostCurve verify = {{4, 1.0}, {8, 2.0}, {16, 4.0}, {32, 8.0}};
  const DraftCostTables t = BuildCostTables({{1, 0.5}}, verify, 1, 40, 8);
  for (int v = 0; v <= 4; ++v) EXPECT_EQ(t.verify_ms[v], 1.0) << v;
  for (int v = 5; v <= 8; ++v) EXPECT_EQ(t.verify_ms[v], 2.0) << v;
  for (int v = 9; v <= 16; ++v) EXPECT_EQ(t.verify_ms[v], 4.0) << v;
  for (int v = 17; v <= 40; ++v) EXPECT_EQ(t.verify_ms[v], 4.0 + 0.25 * (v - 16)) << v;
  // No capture sizes (limit 0): the step function everywhere, as vLLM's `if cudagraph_limit:`.
  const DraftCostTables s = BuildCostTables({{1, 0.5}}, verify, 1, 20, 0);
  EXPECT_EQ(s.verify_ms[9], 4.0);
  EXPECT_EQ(s.verify_ms[17], 8.0);
  // A falling extrapolation is floored: draft at 0, verify at 1e-6.
  const DraftCostTables f = BuildCostTables({{0, 1.0}, {1, 1.0}}, {{0, 0.0}}, 2, 1, 0);
  EXPECT_EQ(f.draft_ms, (std::vector<double>{1.0, 1.0, 1.0}));
  EXPECT_EQ(f.verify_ms, (std::vector<double>{1e-6, 1e-6}));
}

// batches_to_profile: the capture sizes, then 1.5x and doublings of the largest up to the
// token budget, less the capture sizes.
TEST(CostProfileSizes, CaptureSizesThenTailSizes) {
  EXPECT_EQ(CostProfileSizes({1, 2, 4, 8, 512}, 16384),
            (std::vector<int32_t>{1, 2, 4, 8, 512, 768, 1024, 2048, 4096, 8192, 16384}));
  EXPECT_EQ(CostProfileSizes({8, 16, 24}, 40), (std::vector<int32_t>{8, 16, 24, 36, 40}));
  EXPECT_EQ(CostProfileSizes({8, 16}, 16), (std::vector<int32_t>{8, 16}));
  EXPECT_EQ(CostProfileSizes({}, 16), (std::vector<int32_t>{}));
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

// get_max_chunk_logits: 2^30 bytes of float32 logits rows; 2,076 at DeepSeek's vocabulary.
TEST(MaxChunkLogits, OneGibibyteOfFloat32Rows) {
  EXPECT_EQ(MaxChunkLogits(129280), 2076);
  EXPECT_EQ(MaxChunkLogits(32000), 8388);
  EXPECT_EQ(MaxChunkLogits(int64_t{1} << 40), 1);
}

// The budget never exceeds the logits chunk less one bonus row per request: a flat table
// would keep all 5 drafts, the chunk leaves room for 3 (2 requests, 5 rows), then for none.
TEST(ComputeDraftBudget, CappedByTheLogitsChunk) {
  const std::vector<float> conf = {0.9f, 0.5f, 0.2f, 0.8f, 0.1f, 0.05f};
  const std::vector<int32_t> valid = {3, 2};
  DraftBudgetScratch scratch;
  const DraftCostTables flat{{1.0, 1.0, 1.0}, std::vector<double>(16, 10.0)};
  BudgetInputs in{conf.data(), valid.data(), 2, 3, 2, 2, 2};
  in.max_total_logits = 5;
  EXPECT_EQ(MaxDraftBudget(in), 3);
  EXPECT_EQ(ComputeDraftBudget(in, flat, &scratch), 3);
  in.max_total_logits = 1;  // below one row per request: max(0, 1 - 2) = 0
  EXPECT_EQ(MaxDraftBudget(in), 0);
  EXPECT_EQ(ComputeDraftBudget(in, flat, &scratch), 0);
  in.max_total_logits = MaxChunkLogits(129280);
  EXPECT_EQ(ComputeDraftBudget(in, flat, &scratch), 5);
}

// compact_batch's host split: B / nv to each verification row, one more to the first B % nv,
// no per-request cap; the drafts as scheduled when B covers them; rows without drafts get 0.
TEST(HostDraftSplit, EvenUncappedRemainderFirst) {
  const std::vector<int32_t> drafts = {5, 1, 1};
  std::vector<int32_t> split(3);
  HostDraftSplit(drafts.data(), 3, 6, split.data());
  EXPECT_EQ(split, (std::vector<int32_t>{2, 2, 2}));
  HostDraftSplit(drafts.data(), 3, 5, split.data());
  EXPECT_EQ(split, (std::vector<int32_t>{2, 2, 1}));
  HostDraftSplit(drafts.data(), 3, 7, split.data());
  EXPECT_EQ(split, (std::vector<int32_t>{5, 1, 1}));
  HostDraftSplit(drafts.data(), 3, 0, split.data());
  EXPECT_EQ(split, (std::vector<int32_t>{0, 0, 0}));
  const std::vector<int32_t> with_prefill = {3, 3, 0};
  HostDraftSplit(with_prefill.data(), 3, 5, split.data());
  EXPECT_EQ(split, (std::vector<int32_t>{3, 2, 0}));
}

}  // namespace
}  // namespace dspark::sim
