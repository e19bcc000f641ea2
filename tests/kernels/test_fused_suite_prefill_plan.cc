// fused-suite's in-block chunk plan (kernels/suite/fused_suite_prefill_plan.cuh): on random
// layouts of up to kPrefillPlanCap prefill requests (many small requests per group, zero-length
// and zero-row requests, requests past the workspace alone, runs of each) and budgets from one KV
// row up, every block's place, formed by 256 emulated threads phase by phase over poisoned shared
// memory, equals the sequential walk's (PlacePrefillRequest) field for field, at both ratios;
// sizes off the monotone test fall back to the walk. Then whole steps of many prefill requests,
// past kSharedQslCap too (the walk's mode), through fused-suite against the reference, with the
// CPU path equal to the per-thread emulation (which runs the plan's phases) on every buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/reference/indexer_prefill_step.h"
#include "kernels/suite/fused_suite_launch.cuh"
#include "kernels/suite/fused_suite_prefill.cuh"
#include "kernels/suite/fused_suite_prefill_plan.cuh"
#include "kernels/suite/suite.h"
#include "kernels/suite/suite_impls.h"
#include "tests/kernels/prefill_step_util.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::Below;
using suite_test::PathsOff;
using suite_test::RandomPrefills;
using suite_test::Req;

std::string Describe(const PrefillChunkPlace& a) {
  return "first " + std::to_string(a.first) + " last " + std::to_string(a.last) + " row_in_group " +
         std::to_string(a.row_in_group) + " query_in_group " + std::to_string(a.query_in_group) + " chunks " +
         std::to_string(a.chunks) + " group_rows " + std::to_string(a.group_rows) + " cu_at " +
         std::to_string(a.cu_at) + " rows_at " + std::to_string(a.rows_at) + " query_at " + std::to_string(a.query_at);
}

bool Same(const PrefillChunkPlace& a, const PrefillChunkPlace& b) {
  return a.first == b.first && a.last == b.last && a.row_in_group == b.row_in_group &&
         a.query_in_group == b.query_in_group && a.chunks == b.chunks && a.group_rows == b.group_rows &&
         a.cu_at == b.cu_at && a.rows_at == b.rows_at && a.query_at == b.query_at;
}

// Device-view sizes of `nd` decode requests (whatever they hold: the plan reads [nd, R)) and the prefills.
struct Sizes {
  std::vector<int32_t> qsl, seq_lens;
  int32_t nd = 0, n = 0;
};
Sizes MakeSizes(std::mt19937_64& rng, const std::vector<Req>& prefills) {
  Sizes z;
  z.nd = Below(rng, 4);
  z.n = static_cast<int32_t>(prefills.size());
  z.qsl.push_back(0);
  for (int32_t i = 0; i < z.nd; ++i) {
    z.qsl.push_back(z.qsl.back() + 1 + Below(rng, 3));
    z.seq_lens.push_back(10 + Below(rng, 100));
  }
  for (const Req& r : prefills) {
    z.qsl.push_back(z.qsl.back() + r.q);
    z.seq_lens.push_back(r.seq);
  }
  return z;
}

// Block `own`'s plan phases on every thread of the block, each phase for all threads before the
// next (the block barrier's guarantee), over shared memory poisoned first.
void RunPlan(const PrefillPlanBlock& plan, int32_t own, PrefillJobShared& s) {
  std::memset(static_cast<void*>(&s), 0xA5, sizeof(PrefillJobShared));
  const int steps = kPrefillPlanSteps + PrefillPlanRounds(plan.n);
  for (int step = 0; step < steps; ++step)
    for (int32_t t = 0; t < kPrefillPlanThreads; ++t) plan.Phase(step, own, t, s);
}

TEST(FusedSuitePrefillPlan, EveryBlocksPlaceEqualsTheSequentialWalk) {
  std::mt19937_64 rng(20261203);
  auto s = std::make_unique<PrefillJobShared>();
  const std::vector<int32_t> fixed_n = {1, 2, 3, 16, 255, 256, 257, 511, 512, 1000, 1023, kPrefillPlanCap};
  int64_t places = 0, alone_over = 0, dropped = 0, sliced = 0, many = 0, single_groups = 0;
  for (int iter = 0; iter < 90; ++iter) {
    const int32_t n = iter < static_cast<int>(fixed_n.size()) ? fixed_n[iter] : 1 + Below(rng, kPrefillPlanCap);
    const int64_t workspace = std::vector<int64_t>{1, 40, 700, 3000, 9000}[Below(rng, 5)];
    const int64_t max_logits = std::vector<int64_t>{1, 500, 20000, 400000, int64_t{1} << 40}[Below(rng, 5)];
    const int32_t scale = static_cast<int32_t>(std::max<int64_t>(workspace, 8));
    const Sizes z = MakeSizes(rng, RandomPrefills(rng, n, iter % 3, scale));
    const PrefillPlanBlock plan{z.qsl.data(), z.seq_lens.data(), z.nd, n, workspace, max_logits};
    // The walk's groups at ratio 1; the blocks checked: the first and last of a sample of groups, some others.
    const PrefillDeviceSizes sz1{z.qsl.data(), z.seq_lens.data(), z.nd, 1};
    std::vector<int32_t> owns;
    for (int32_t first = 0; first < n;) {
      const PrefillGroup g = NextPrefillGroup(sz1, first, n, workspace, max_logits);
      const int64_t chunks = PrefillGroupChunks(g, max_logits);
      alone_over += g.end == first + 1 && (g.rows > workspace || g.m * g.rows > max_logits);
      dropped += g.rows == 0;
      sliced += chunks > 1;
      many += g.end - first >= 8;
      single_groups += g.end == first + 1;
      if (n <= 40 || Below(rng, 12) == 0) {
        owns.push_back(first);
        owns.push_back(g.end - 1);
      }
      first = g.end;
    }
    for (int j = 0; j < 6; ++j) owns.push_back(Below(rng, n));
    owns.push_back(n - 1);
    for (int32_t own : owns) {
      RunPlan(plan, own, *s);
      ASSERT_EQ(s->planned, 1) << "iteration " << iter;
      for (int k = 0; k < 2; ++k) {
        const PrefillDeviceSizes sz{z.qsl.data(), z.seq_lens.data(), z.nd, k + 1};
        const PrefillChunkPlace want = PlacePrefillRequest(sz, n, own, workspace, max_logits);
        const PrefillChunkPlace got = plan.Place(*s, k, own);
        ASSERT_TRUE(Same(got, want)) << "iteration " << iter << " n " << n << " own " << own << " ratio " << k + 1
                                     << " workspace " << workspace << " max_logits " << max_logits << "\n got  "
                                     << Describe(got) << "\n want " << Describe(want);
        ++places;
      }
    }
  }
  EXPECT_GT(places, 2000);
  // The layouts reach every kind of group the greedy step makes.
  EXPECT_GT(alone_over, 100) << "requests past a budget alone";
  EXPECT_GT(dropped, 100) << "groups without KV rows (dropped)";
  EXPECT_GT(sliced, 100) << "groups of several chunks";
  EXPECT_GT(many, 100) << "groups of 8 requests or more";
  EXPECT_GT(single_groups, 1000);
}

// A negative seq_len or a decreasing qsl in the prefill range breaks the monotone test: the plan
// says so (the job then walks), and never for sizes within the preconditions.
TEST(FusedSuitePrefillPlan, SizesOffTheMonotoneTestFallBackToTheWalk) {
  std::mt19937_64 rng(7);
  auto s = std::make_unique<PrefillJobShared>();
  for (int iter = 0; iter < 24; ++iter) {
    const int32_t n = 1 + Below(rng, 600);
    Sizes z = MakeSizes(rng, RandomPrefills(rng, n, iter % 3, 500));
    const int32_t bad = z.nd + Below(rng, n);
    if (iter % 2 == 0)
      z.seq_lens[bad] = -1 - Below(rng, 1000);
    else
      z.qsl[bad + 1] = z.qsl[bad] - 1 - Below(rng, 5);
    const PrefillPlanBlock plan{z.qsl.data(), z.seq_lens.data(), z.nd, n, 300, 20000};
    RunPlan(plan, Below(rng, n), *s);
    EXPECT_EQ(s->planned, 0) << "iteration " << iter;
  }
}

// Runs fused-suite on `b` with the CPU path and thread by thread: both equal to the reference on
// every region, and to each other on every buffer.
void ExpectExactBothWays(const CaseBatch& b, const ModelConsts& consts, const std::string& what) {
  CpuSuite fast(consts), slow(consts);
  const BatchInputs in = b.Inputs();
  ASSERT_TRUE(fast.Prepare(in.sizes).ok()) << what;
  const SuiteReference want = ComputeSuiteReference(in, fast.layout(), consts);
  const absl::StatusOr<SuiteRunResult> r = fast.Run(Impl::kFusedSuite, in, &want);
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  EXPECT_TRUE(r->mismatches.empty()) << what << "\n" << DescribeMismatches(r->mismatches);
  EXPECT_EQ(r->counters.Launches(), 1) << what;
  {
    PathsOff off;
    const absl::StatusOr<SuiteRunResult> rs = slow.Run(Impl::kFusedSuite, in, &want);
    ASSERT_TRUE(rs.ok()) << what << ": " << rs.status();
    EXPECT_TRUE(rs->mismatches.empty()) << what << " (thread by thread)\n" << DescribeMismatches(rs->mismatches);
  }
  EXPECT_TRUE(*slow.Image(Impl::kFusedSuite) == *fast.Image(Impl::kFusedSuite))
      << what << ": the CPU path changed a cell";
}

// Steps of many prefill requests (suite_test::ManyPrefillStep: a few hundred, and past
// kSharedQslCap where the job walks; zero-length ones, long ones past the workspace, runs of
// small ones; small budgets, the default ones, a workspace past INT32_MAX). The GPU twin,
// FusedSuitePrefillGpu.ManyPrefillRequestsEqualReferenceEagerAndReplayed, runs the same steps.
TEST(FusedSuitePrefill, ManyPrefillRequestsMatchReferenceAndPerThreadEmulation) {
  std::mt19937_64 rng(suite_test::kManyPrefillSeed);
  int64_t chunks = 0;
  for (int iter = 0; iter < suite_test::kManyPrefillSteps; ++iter) {
    const suite_test::ManyPrefillCase c = suite_test::ManyPrefillStep(rng, iter);
    ASSERT_LE(c.batch.sizes.capacity, suite_test::kManyPrefillMaxTokens) << c.what;
    ASSERT_LE(c.batch.sizes.num_reqs, suite_test::kManyPrefillMaxReqs) << c.what;
    ASSERT_LE(c.batch.sizes.bt_stride, suite_test::kManyPrefillMaxBtStride) << c.what;
    if (iter <= 1) ASSERT_EQ(c.batch.sizes.num_reqs > kSharedQslCap, iter == 0) << c.what << ": the mode meant";
    ExpectExactBothWays(c.batch, c.consts, c.what);
    chunks += ref::IndexerPrefillStep(c.batch.sizes, c.batch.Inputs().device, 1, c.consts, INT64_MAX).chunks;
  }
  EXPECT_GT(chunks, 500);
}

}  // namespace
}  // namespace dspark
