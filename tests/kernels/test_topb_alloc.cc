// The adaptive-verification allocation kernel body (CPU emulation) against its independent
// sort-based reference: exact integer comparison of kept counts and boundaries.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/reference/topb_alloc.h"
#include "kernels/topb_alloc.cuh"

namespace dspark {
namespace {

struct AllocCase {
  std::string name;
  std::vector<float> scores;        // [nd, max_k]
  std::vector<int32_t> max_drafts;  // [nd]
  int32_t max_k;
  int32_t budget;
  std::vector<int32_t> tail;        // [R - nd]
};

struct AllocOut {
  std::vector<int32_t> kept, qsl;
};

AllocOut RunKernel(const AllocCase& c) {
  const int32_t nd = static_cast<int32_t>(c.max_drafts.size());
  const int32_t r = nd + static_cast<int32_t>(c.tail.size());
  AllocOut out{std::vector<int32_t>(nd, -99), std::vector<int32_t>(r + 1, -99)};
  TopBAllocParams p{c.scores.data(), c.max_drafts.data(), c.tail.empty() ? nullptr : c.tail.data(),
                    out.qsl.data(),   out.kept.data(),     nd, r, c.max_k, c.budget, 1};
  EXPECT_TRUE(CanImplementTopBAlloc(p).ok()) << CanImplementTopBAlloc(p);
  EmulateTopBAlloc(p);
  return out;
}

void ExpectMatchesReference(const AllocCase& c) {
  const AllocOut got = RunKernel(c);
  const ref::TopBAllocation want =
      ref::TopBAlloc(c.scores, c.max_drafts, c.max_k, c.budget, 1, c.tail);
  EXPECT_EQ(got.kept, want.kept) << c.name;
  EXPECT_EQ(got.qsl, want.query_start_loc) << c.name;
}

// Survival-score rows (non-increasing along k), values drawn from a small set so that ties
// across requests are common.
AllocCase RandomCase(std::mt19937_64& rng, int32_t nd, int32_t max_k, int32_t pads, bool ties) {
  AllocCase c;
  c.name = "random";
  c.max_k = max_k;
  c.scores.resize(static_cast<size_t>(nd) * max_k);
  c.max_drafts.resize(nd);
  for (int32_t r = 0; r < nd; ++r) {
    c.max_drafts[r] = static_cast<int32_t>(rng() % static_cast<uint64_t>(max_k + 1));
    float s = 1.0f;
    for (int32_t k = 0; k < max_k; ++k) {
      const float conf = ties ? 0.5f + 0.125f * static_cast<float>(rng() % 4)
                              : static_cast<float>((rng() >> 11) * 0x1.0p-53);
      s *= conf;
      c.scores[static_cast<size_t>(r) * max_k + k] = s;
    }
  }
  int32_t eligible = 0;
  for (int32_t d : c.max_drafts) eligible += d;
  c.budget = static_cast<int32_t>(rng() % static_cast<uint64_t>(eligible + 2));
  int32_t offset = 0;
  for (int32_t j = 0; j < pads; ++j) {
    if (rng() % 2) offset += static_cast<int32_t>(rng() % 300);
    c.tail.push_back(offset);
  }
  return c;
}

TEST(TopBAlloc, HandPickedTiesGoToLowerRequestThenLowerPosition) {
  // Three requests, identical rows: the first B slots in (request, position) order win.
  AllocCase c{"ties", {0.5f, 0.25f, 0.5f, 0.25f, 0.5f, 0.25f}, {2, 2, 2}, 2, 4, {}};
  const AllocOut got = RunKernel(c);
  EXPECT_EQ(got.kept, (std::vector<int32_t>{2, 1, 1}));
  EXPECT_EQ(got.qsl, (std::vector<int32_t>{0, 3, 5, 7}));
  ExpectMatchesReference(c);
}

TEST(TopBAlloc, HigherScoreBeatsLowerRequestIdAndEqualScoresGoToLowerId) {
  // Order: (r1, k0) = 0.95 first; (r0, k0) = 0.9 ties with (r1, k1) = 0.9 and wins on id.
  AllocCase c{"score", {0.9f, 0.1f, 0.95f, 0.9f}, {2, 2}, 2, 2, {0, 0}};
  const AllocOut got = RunKernel(c);
  EXPECT_EQ(got.kept, (std::vector<int32_t>{1, 1}));
  // Two padding requests: the tail is filled with the total.
  EXPECT_EQ(got.qsl, (std::vector<int32_t>{0, 2, 4, 4, 4}));
  ExpectMatchesReference(c);
}

TEST(TopBAlloc, BudgetZeroKeepsNoDraft) {
  AllocCase c{"b0", {0.9f, 0.8f, 0.7f, 0.6f}, {2, 2}, 2, 0, {}};
  const AllocOut got = RunKernel(c);
  EXPECT_EQ(got.kept, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(got.qsl, (std::vector<int32_t>{0, 1, 2}));
  ExpectMatchesReference(c);
}

TEST(TopBAlloc, BudgetAllAndBeyondKeepEveryEligibleDraft) {
  for (int32_t budget : {3, 4, 100}) {
    AllocCase c{"ball", {0.9f, 0.8f, 0.7f, 0.6f}, {1, 2}, 2, budget, {}};
    const AllocOut got = RunKernel(c);
    EXPECT_EQ(got.kept, (std::vector<int32_t>{1, 2})) << budget;
    EXPECT_EQ(got.qsl, (std::vector<int32_t>{0, 2, 5})) << budget;
    ExpectMatchesReference(c);
  }
}

TEST(TopBAlloc, ZeroMaxDraftsNeverKeepsAndIneligibleHighScoresAreIgnored) {
  // Request 0 has the best scores but no eligible draft; request 1 only its first slot.
  AllocCase c{"zero", {0.99f, 0.98f, 0.97f, 0.5f, 0.4f, 0.3f}, {0, 1}, 3, 3, {}};
  const AllocOut got = RunKernel(c);
  EXPECT_EQ(got.kept, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(got.qsl, (std::vector<int32_t>{0, 1, 3}));
  ExpectMatchesReference(c);
}

TEST(TopBAlloc, NoDecodesWritesOnlyTheTail) {
  AllocCase c{"nodecode", {}, {}, 5, 0, {7, 7, 19}};
  const AllocOut got = RunKernel(c);
  EXPECT_EQ(got.qsl, (std::vector<int32_t>{0, 7, 7, 19}));
  ExpectMatchesReference(c);
}

TEST(TopBAlloc, PrefillTailIsShiftedByTheDecodeTotal) {
  AllocCase c{"mixed", {0.9f, 0.1f, 0.8f, 0.7f}, {2, 2}, 2, 2, {1024, 1030, 1030}};
  const AllocOut got = RunKernel(c);
  EXPECT_EQ(got.kept, (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(got.qsl, (std::vector<int32_t>{0, 2, 4, 1028, 1034, 1034}));
  ExpectMatchesReference(c);
}

TEST(TopBAlloc, NegativeZeroTiesWithPositiveZero) {
  AllocCase c{"negzero", {-0.0f, 0.0f}, {1, 1}, 1, 1, {}};
  const AllocOut got = RunKernel(c);
  EXPECT_EQ(got.kept, (std::vector<int32_t>{1, 0}));
  ExpectMatchesReference(c);
}

TEST(TopBAlloc, CanImplementRejectsOversizedAndInconsistentParams) {
  std::vector<int32_t> qsl(8);
  TopBAllocParams p{nullptr, nullptr, nullptr, qsl.data(), nullptr, 0, 0, 5, 0, 1};
  EXPECT_TRUE(CanImplementTopBAlloc(p).ok());
  p.max_k = kTopBMaxK + 1;
  EXPECT_EQ(CanImplementTopBAlloc(p).code(), absl::StatusCode::kOutOfRange);
  p.max_k = 5;
  p.num_decodes = kTopBMaxDecodes + 1;
  EXPECT_EQ(CanImplementTopBAlloc(p).code(), absl::StatusCode::kOutOfRange);
  p.num_decodes = 0;
  p.num_reqs = 3;  // padding rows but no tail offsets
  EXPECT_EQ(CanImplementTopBAlloc(p).code(), absl::StatusCode::kInvalidArgument);
  p.num_reqs = 0;
  p.budget = -1;
  EXPECT_EQ(CanImplementTopBAlloc(p).code(), absl::StatusCode::kInvalidArgument);
}

struct SizeParam {
  int32_t num_decodes;
  int32_t max_k;
  bool ties;
};

void PrintTo(const SizeParam& p, std::ostream* os) {
  *os << "nd=" << p.num_decodes << " k=" << p.max_k << (p.ties ? " ties" : " distinct");
}

class TopBAllocRandom : public ::testing::TestWithParam<SizeParam> {};

TEST_P(TopBAllocRandom, EmulatedKernelMatchesReference) {
  const SizeParam sp = GetParam();
  std::mt19937_64 rng(0xD5A7 + sp.num_decodes * 31 + sp.max_k);
  for (int trial = 0; trial < 20; ++trial) {
    AllocCase c = RandomCase(rng, sp.num_decodes, sp.max_k, trial % 4, sp.ties);
    c.name = "trial " + std::to_string(trial);
    ExpectMatchesReference(c);
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, TopBAllocRandom,
    ::testing::Values(SizeParam{1, 5, true}, SizeParam{2, 5, false}, SizeParam{3, 1, true},
                      SizeParam{7, 5, true}, SizeParam{17, 5, false}, SizeParam{65, 5, true},
                      SizeParam{257, 5, true}, SizeParam{256, 5, false}, SizeParam{512, 8, true},
                      SizeParam{1024, 4, true}),
    [](const ::testing::TestParamInfo<SizeParam>& info) {
      return "nd" + std::to_string(info.param.num_decodes) + "_k" +
             std::to_string(info.param.max_k) + (info.param.ties ? "_ties" : "_distinct");
    });

}  // namespace
}  // namespace dspark
