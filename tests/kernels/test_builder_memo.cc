// Builder-level deduplication of the CPU check (kernels/suite/builder_memo.h): on a run of
// randomized steps through the eight seed cases, stale host views included (where (a) / (b)'s
// SWA and ring run on their own maps), every implementation gets the same mismatches, the same
// counters and the same defined regions with dedup on as with it off; and the lockstep contract
// is enforced.
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include "kernels/suite/builder_memo.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/regions.h"
#include "kernels/suite/suite.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;

std::string Counters(const OpCounters& c) {
  return std::to_string(c.kernels) + "/" + std::to_string(c.h2d_copies) + "/" + std::to_string(c.d2h_copies) + "/" +
         std::to_string(c.d2d_copies) + "/" + std::to_string(c.fills) + "/" + std::to_string(c.host_syncs) + "/" +
         std::to_string(c.host_array_ops);
}

std::string Kinds(const std::vector<FieldMismatch>& ms) {
  std::string out;
  for (const FieldMismatch& m : ms) out += std::string(MismatchKindName(m.kind)) + " ";
  return DescribeMismatches(ms) + out;
}

// The defined regions (kernels/suite/regions.h, the table CompareSuite walks), cell by cell.
void ExpectDefinedRegionsEqual(SuiteImage a, SuiteImage b, const BatchInputs& in, const SuiteReference& ref,
                               const SuiteLayout& l, const std::string& impl) {
  const SuiteOutputs va = a.View(), vb = b.View();
  for (const SuiteRegion& r : SuiteRegions(ref, in, l, ModelConsts{})) {
    const std::string what = impl + " " + r.builder + "/" + r.field;
    for (int64_t row = 0; row < r.rows; ++row) {
      const int64_t at = r.got_offset + row * r.got_stride;
      if (r.int64_field) {
        const int64_t *x = va.*(r.got64) + at, *y = vb.*(r.got64) + at;
        for (int64_t c = 0; c < r.cols; ++c)
          if (x[c] != y[c]) return ADD_FAILURE() << what << " differs at " << at + c << ": " << x[c] << " vs " << y[c];
      } else {
        const int32_t* x = (r.k >= 0 ? va.indexer[r.k].*(r.got_indexer) : va.*(r.got32)) + at;
        const int32_t* y = (r.k >= 0 ? vb.indexer[r.k].*(r.got_indexer) : vb.*(r.got32)) + at;
        for (int64_t c = 0; c < r.cols; ++c)
          if (x[c] != y[c]) return ADD_FAILURE() << what << " differs at " << at + c << ": " << x[c] << " vs " << y[c];
      }
    }
  }
}

TEST(BuilderMemo, DedupOnAndOffAgreeAcrossStepsOfEveryCase) {
  CpuSuite on, off;
  on.EnableDedup(ImplsOfModel(ModelKind::kV41));
  int64_t steps = 0, stale = 0;
  for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    for (SeedCase c : kAllSeedCases) {
      // Each suite its own copy: the MLA builder clamps the block table in place.
      const CaseBatch batch = MustMake(c, OptionsFor(seed));
      CaseBatch b_on = batch, b_off = batch;
      const BatchInputs in_on = b_on.Inputs(), in_off = b_off.Inputs();
      ASSERT_TRUE(on.Prepare(in_on.sizes).ok());
      ASSERT_TRUE(off.Prepare(in_off.sizes).ok());
      ASSERT_EQ(on.layout(), off.layout());
      const SuiteReference want_on = ComputeSuiteReference(in_on, on.layout(), ModelConsts{});
      const SuiteReference want_off = ComputeSuiteReference(in_off, off.layout(), ModelConsts{});
      ASSERT_TRUE(on.BeginStep(in_on, want_on).ok());
      ++steps;
      stale += batch.HostStale();
      for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
        const std::string name = std::string(ImplName(impl)) + " on " + batch.name;
        const absl::StatusOr<SuiteRunResult> r_on = on.Run(impl, in_on, &want_on);
        const absl::StatusOr<SuiteRunResult> r_off = off.Run(impl, in_off, &want_off);
        ASSERT_TRUE(r_on.ok()) << name << ": " << r_on.status();
        ASSERT_TRUE(r_off.ok()) << name << ": " << r_off.status();
        EXPECT_EQ(Kinds(r_on->mismatches), Kinds(r_off->mismatches)) << name;
        EXPECT_EQ(Counters(r_on->counters), Counters(r_off->counters)) << name;
        const absl::StatusOr<SuiteImage> im_on = on.Image(impl), im_off = off.Image(impl);
        ASSERT_TRUE(im_on.ok() && im_off.ok());
        ExpectDefinedRegionsEqual(*im_on, *im_off, in_on, want_on, on.layout(), name);
      }
    }
  }
  EXPECT_GT(stale, 0) << "no stale-host step: the private path of the memo was not exercised";
  EXPECT_EQ(steps, 6 * static_cast<int64_t>(std::size(kAllSeedCases)));
}

// The executor's split (CpuExecutor): every implementation emulated first (the reference
// computed meanwhile, only its token map given to BeginStep), then every one compared: the same
// mismatches and counters as Run, step after step on the same buffers.
TEST(BuilderMemo, EmulateAllThenCompareAllEqualsRun) {
  CpuSuite run, split;
  run.EnableDedup(ImplsOfModel(ModelKind::kV41));
  split.EnableDedup(ImplsOfModel(ModelKind::kV41));
  int64_t mismatching = 0;
  for (uint64_t seed : {7, 8, 9}) {
    for (SeedCase c : kAllSeedCases) {
      const CaseBatch batch = MustMake(c, OptionsFor(seed));
      CaseBatch b_run = batch, b_split = batch;
      const BatchInputs in_run = b_run.Inputs(), in_split = b_split.Inputs();
      ASSERT_TRUE(run.Prepare(in_run.sizes).ok());
      ASSERT_TRUE(split.Prepare(in_split.sizes).ok());
      const SuiteReference want_run = ComputeSuiteReference(in_run, run.layout(), ModelConsts{});
      ASSERT_TRUE(run.BeginStep(in_run, want_run).ok());
      const SuiteReference want_split = ComputeSuiteReference(in_split, split.layout(), ModelConsts{});
      ASSERT_TRUE(split.BeginStep(in_split, want_split.token_to_req).ok());
      std::vector<OpCounters> counters;
      for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
        const absl::StatusOr<OpCounters> emulated = split.Emulate(impl, in_split);
        ASSERT_TRUE(emulated.ok()) << emulated.status();
        counters.push_back(*emulated);
      }
      for (size_t i = 0; i < ImplsOfModel(ModelKind::kV41).size(); ++i) {
        const Impl impl = ImplsOfModel(ModelKind::kV41)[i];
        const std::string name = std::string(ImplName(impl)) + " on " + batch.name;
        const absl::StatusOr<SuiteRunResult> r = run.Run(impl, in_run, &want_run);
        ASSERT_TRUE(r.ok()) << name << ": " << r.status();
        const std::vector<FieldMismatch> ms = split.Compare(impl, in_split, want_split);
        EXPECT_EQ(Kinds(r->mismatches), Kinds(ms)) << name;
        EXPECT_EQ(Counters(r->counters), Counters(counters[i])) << name;
        mismatching += !ms.empty();
      }
    }
  }
  EXPECT_GT(mismatching, 0) << "no stale-host or residue difference: the comparison was not exercised";
}

// The shared buffers carry every sharer's history only if each runs every step.
TEST(BuilderMemo, EveryImplementationRunsOncePerStep) {
  CpuSuite suite;
  suite.EnableDedup({Impl::kChain, Impl::kFused});
  const CaseBatch b = MustMake(SeedCase::kDecode, OptionsFor(1));
  const BatchInputs in = b.Inputs();
  ASSERT_TRUE(suite.Prepare(in.sizes).ok());
  const SuiteReference want = ComputeSuiteReference(in, suite.layout(), ModelConsts{});
  // Run before BeginStep, and an implementation outside the set.
  EXPECT_EQ(suite.Run(Impl::kChain, in, &want).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(suite.BeginStep(in, want).ok());
  EXPECT_EQ(suite.Run(Impl::kFusedSuite, in, &want).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(suite.Run(Impl::kChain, in, &want).ok());
  // (d) did not run in this step: the next one is refused.
  const absl::Status next = suite.BeginStep(in, want);
  EXPECT_EQ(next.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(next.message().find("vllm-0.31 ran 0 times"), std::string::npos) << next;
}

}  // namespace
}  // namespace dspark
