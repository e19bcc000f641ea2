// The builder suite of one step in every registered implementation, under CPU emulation:
// equality with the reference on randomized batches of the eight seed cases (implementations that
// read the host split exempt only where the split is stale, and there the divergence is
// asserted; the others never diverge from stale host state), padding residue, and the
// interface's error paths. Launch counts: tests/test_suite_launches.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "kernels/suite/cases.h"
#include "kernels/suite/suite.h"
#include "kernels/suite/suite_impls.h"
#include "kernels/token_map.cuh"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;
using suite_test::RandomizedCases;
using suite_test::SuiteCaseParam;


bool HasKind(const std::vector<FieldMismatch>& ms, MismatchKind kind) {
  return std::any_of(ms.begin(), ms.end(), [&](const FieldMismatch& m) { return m.kind == kind; });
}

// Whether the host's per-request split differs from the device's (not only its seq_lens bound).
bool HostSplitStale(const CaseBatch& b) { return b.host_qsl != b.qsl; }

bool OldIndexerChain(Impl impl) { return impl.info().traits.old_indexer_chain; }

// Padding rows of the indexer block tables exist, with columns past 0.
bool HasPaddingResidueCells(const CaseBatch& b) {
  return b.sizes.num_decode_tokens > b.qsl[b.sizes.num_decodes] && b.sizes.bt_width >= 2;
}

class SuiteEquivalence : public ::testing::TestWithParam<SuiteCaseParam> {};

TEST_P(SuiteEquivalence, EveryImplEqualsReferenceOrDivergesOnlyFromStaleHost) {
  const SuiteCaseParam& p = GetParam();
  const CaseBatch b = MustMake(p.seed_case, p.options);
  // One request alone cannot have another split of the same total.
  const bool lone_adaptive = p.seed_case == SeedCase::kAdaptiveVerify && p.options.batch < 2;
  ASSERT_EQ(b.HostStale(), SeedCaseHostStale(p.seed_case) && !lone_adaptive) << b.name;
  CpuSuite suite;
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    SCOPED_TRACE(std::string(ImplName(impl)) + " on " + b.name);
    const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
    ASSERT_TRUE(r.ok()) << r.status();
    const std::vector<FieldMismatch>& ms = r->mismatches;
    EXPECT_FALSE(HasKind(ms, MismatchKind::kBug)) << DescribeMismatches(ms);
    // Only the host mappings of (a) and (b) go wrong, and only when the split is stale (a draft
    // step's host seq_lens bound is read by no decode row: docs/states.md s.4).
    EXPECT_EQ(HasKind(ms, MismatchKind::kStaleHost), ReadsHostBoundaries(impl) && HostSplitStale(b))
        << DescribeMismatches(ms);
    // The old indexer chain clears only column 0 of padding rows: the poisoned cells past it
    // survive on the first step.
    EXPECT_EQ(HasKind(ms, MismatchKind::kPaddingResidue), OldIndexerChain(impl) && HasPaddingResidueCells(b))
        << DescribeMismatches(ms);
    for (const FieldMismatch& m : ms)
      if (m.kind == MismatchKind::kPaddingResidue) EXPECT_EQ(m.field, "bt_out_padding");
  }
}

INSTANTIATE_TEST_SUITE_P(EightSeedCases, SuiteEquivalence, ::testing::ValuesIn(RandomizedCases()),
                         [](const auto& info) { return info.param.name; });

// (d) and fused-suite stay equal to the reference over a run of steps through every case
// (persistent buffers, layouts growing on the way).
TEST(SuiteFusedSuite, MatchesReferenceAcrossSteps) {
  CpuSuite suite;
  int steps = 0;
  for (uint64_t seed : {3, 1, 2, 5})
    for (SeedCase c : kAllSeedCases) {
      const CaseBatch b = MustMake(c, OptionsFor(seed));
      for (Impl impl : {Impl::kFused, Impl::kFusedSuite}) {
        const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_TRUE(r->mismatches.empty()) << b.name << " " << ImplName(impl) << "\n"
                                           << DescribeMismatches(r->mismatches);
      }
      ++steps;
    }
  EXPECT_EQ(steps, 32);
}

// Step 1 fills every indexer block-table row; step 2 has padding rows. The old chain clears only
// their column 0, so step 1's block ids survive in the rest: padding residue, found although
// the host view is fresh. The other implementations clear whole rows.
TEST(SuitePaddingResidue, DetectedWithFreshHostView) {
  CaseOptions full;
  full.batch = 16;
  full.seed = 11;
  full.capacity = 64;
  full.min_bt_width = 1600;  // both steps' tables as wide, so the persistent layout is kept
  const CaseBatch step1 = MustMake(SeedCase::kDecode, full);
  CaseOptions padded = full;
  padded.batch = 13;  // 13 tokens padded to the capture size 16: rows 13, 14, 15 are padding
  padded.seed = 12;
  const CaseBatch step2 = MustMake(SeedCase::kDecode, padded);
  ASSERT_EQ(step1.sizes.num_decode_tokens, step1.qsl.back());
  ASSERT_EQ(step2.sizes.num_decode_tokens, 16);
  ASSERT_EQ(step2.qsl.back(), 13);
  ASSERT_FALSE(step1.HostStale());
  ASSERT_FALSE(step2.HostStale());
  ASSERT_GE(step2.sizes.bt_width, 2);

  CpuSuite suite;
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    SCOPED_TRACE(std::string(ImplName(impl)));
    const absl::StatusOr<SuiteRunResult> first = suite.Run(impl, step1.Inputs());
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_TRUE(first->mismatches.empty()) << DescribeMismatches(first->mismatches);
    const absl::StatusOr<SuiteImage> after_first = suite.Image(impl);
    ASSERT_TRUE(after_first.ok());
    const absl::StatusOr<SuiteRunResult> second = suite.Run(impl, step2.Inputs());
    ASSERT_TRUE(second.ok()) << second.status();
    if (!OldIndexerChain(impl)) {
      EXPECT_TRUE(second->mismatches.empty()) << DescribeMismatches(second->mismatches);
      continue;
    }
    ASSERT_EQ(second->mismatches.size(), 2u) << DescribeMismatches(second->mismatches);
    const int32_t stride = suite.layout().bt_out_stride;
    for (int k = 0; k < 2; ++k) {
      const FieldMismatch& m = second->mismatches[k];
      EXPECT_EQ(m.builder, k == 0 ? "indexer_r1" : "indexer_r2");
      EXPECT_EQ(m.field, "bt_out_padding");
      EXPECT_EQ(m.kind, MismatchKind::kPaddingResidue);
      EXPECT_EQ(m.index, int64_t{13} * stride + 1);  // row 13, column 1
      EXPECT_EQ(m.expected, 0);
      // What step 1 left there (a real block id), not poison.
      EXPECT_EQ(m.actual, after_first->indexer[k].bt_out[static_cast<size_t>(m.index)]);
      EXPECT_GT(m.actual, 0);
      EXPECT_EQ(m.count, int64_t{3} * (step2.sizes.bt_width - 1));
    }
  }
}

// More requests than the kernels cache in shared memory: the global-memory search path.
TEST(SuiteLargeBatch, PastSharedBoundaryCache) {
  for (SeedCase c : {SeedCase::kDecode, SeedCase::kAdaptiveVerify}) {
    CaseOptions o;
    o.batch = kSharedQslCap + 76;
    o.seed = 9;
    o.max_num_seqs = 4096;
    o.max_num_batched_tokens = 8192;
    o.max_context = 3000;
    o.padding_reqs = 2;
    const CaseBatch b = MustMake(c, o);
    ASSERT_GT(b.sizes.num_reqs, kSharedQslCap);
    CpuSuite suite;
    for (Impl impl : {Impl::kDeviceChain, Impl::kFused, Impl::kFusedSuite}) {
      const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
      ASSERT_TRUE(r.ok()) << r.status();
      for (const FieldMismatch& m : r->mismatches)
        EXPECT_TRUE(OldIndexerChain(impl) && m.kind == MismatchKind::kPaddingResidue)
            << b.name << " " << ImplName(impl) << "\n" << DescribeMismatches(r->mismatches);
    }
  }
}

// The device rewrites its boundaries in place (same total, another split) between two steps of
// the same buffers: the device-boundary implementations follow, the host-boundary ones diverge
// (their host view is now stale) and are told apart as stale-host.
TEST(SuiteStaleBoundaries, DeviceResplitBetweenSteps) {
  CaseOptions o;
  o.seed = 21;
  CaseBatch b = MustMake(SeedCase::kVerify, o);
  CpuSuite suite;
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->mismatches.empty()) << ImplName(impl) << "\n" << DescribeMismatches(r->mismatches);
  }
  const absl::StatusOr<std::vector<int32_t>> resplit = ResplitDecodeTokens(b);
  ASSERT_TRUE(resplit.ok()) << resplit.status();
  ASSERT_NE(*resplit, b.qsl);
  b.qsl = *resplit;  // the host keeps the old split
  ASSERT_TRUE(b.HostStale());
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(HasKind(r->mismatches, MismatchKind::kStaleHost), ReadsHostBoundaries(impl)) << ImplName(impl);
    EXPECT_FALSE(HasKind(r->mismatches, MismatchKind::kBug)) << DescribeMismatches(r->mismatches);
  }
}

// A corrupted output cell is reported with its index and values, and classified by who wrote it.
TEST(SuiteCompare, ReportsFirstDifferenceAndClassifies) {
  CaseOptions o;
  o.seed = 2;
  o.capacity = 128;
  const CaseBatch b = MustMake(SeedCase::kVerify, o);
  const BatchInputs in = b.Inputs();
  const ModelConsts consts;
  const SuiteLayout layout = MakeSuiteLayout(b.sizes.capacity, b.sizes.num_reqs, b.sizes.bt_stride, consts);
  CpuSuite suite;
  ASSERT_TRUE(suite.Run(Impl::kFusedSuite, in).ok());
  absl::StatusOr<SuiteImage> image = suite.Image(Impl::kFusedSuite);
  ASSERT_TRUE(image.ok());
  // The CpuSuite's layout may be larger; compare with it.
  const SuiteLayout used = suite.layout();
  EXPECT_TRUE(CompareSuite(Impl::kFusedSuite, in, used, consts, image->View()).empty());
  image->swa_indices[5 * consts.swa_window + 3] += 1;
  image->swa_indices[7 * consts.swa_window + 0] += 1;
  image->mla_r2_slots[b.sizes.capacity - 1] = 12345;
  for (Impl impl : {Impl::kFusedSuite, Impl::kChain}) {
    const std::vector<FieldMismatch> ms = CompareSuite(impl, in, used, consts, image->View());
    ASSERT_EQ(ms.size(), 2u) << DescribeMismatches(ms);
    EXPECT_EQ(ms[0].builder, "swa");
    EXPECT_EQ(ms[0].field, "swa_indices");
    EXPECT_EQ(ms[0].index, 5 * consts.swa_window + 3);
    EXPECT_EQ(ms[0].actual, ms[0].expected + 1);
    EXPECT_EQ(ms[0].count, 2);
    EXPECT_EQ(ms[1].builder, "mla_r2");
    EXPECT_EQ(ms[1].field, "compressed_slots");
    EXPECT_EQ(ms[1].index, b.sizes.capacity - 1);
    EXPECT_EQ(ms[1].expected, -1);
    EXPECT_EQ(ms[1].actual, 12345);
    // The host view is fresh: for chain too, an error is a bug.
    for (const FieldMismatch& m : ms) EXPECT_EQ(m.kind, MismatchKind::kBug);
  }
  EXPECT_EQ(layout.window, used.window);
}

TEST(SuiteInterface, ImplNamesRoundTrip) {
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    const absl::StatusOr<Impl> parsed = ParseImpl(ImplName(impl));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, impl);
  }
  EXPECT_EQ(ParseImpl("fused_suite").status().code(), absl::StatusCode::kInvalidArgument);
  const absl::StatusOr<std::vector<Impl>> all = ParseImplList("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), ImplsOfModel(ModelKind::kV41).size());
  const absl::StatusOr<std::vector<Impl>> two = ParseImplList(" fused-suite , chain");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(*two, (std::vector<Impl>{Impl::kFusedSuite, Impl::kChain}));
  EXPECT_EQ(ParseImplList("fused,fused").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseImplList("fused,").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseImpl("before"), Impl::kDeviceChain);
  EXPECT_EQ(*ParseImpl("after"), Impl::kFused);
  // (d)'s old name stays an alias of vllm-0.31.
  EXPECT_EQ(*ParseImpl("vllm-56562"), Impl::kFused);
  EXPECT_EQ(ImplName(Impl::kFused), "vllm-0.31");
  EXPECT_EQ(ImplName(*ParseImpl("vllm-0.34")), "vllm-0.34");
  EXPECT_EQ(Impl::kVllm034.info().execution, MetadataExecution::kRecordedUniformDecode);
  EXPECT_EQ(Impl::kFused.info().execution, MetadataExecution::kEager);
  EXPECT_EQ(*ParseImpl("chain"), Impl::Named("vllm-pre47474"));
  EXPECT_EQ(*ParseImpl("cached"), Impl::Named("vllm-47474"));
  EXPECT_EQ(ParseImplList("before,vllm-pre56562").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ImplHelpText().find("vllm-pre56562 (also before, device-chain)"), std::string::npos) << ImplHelpText();
  EXPECT_TRUE(ReadsHostBoundaries(Impl::kChain) && ReadsHostBoundaries(Impl::kCached));
  EXPECT_FALSE(ReadsHostBoundaries(Impl::kDeviceChain) || ReadsHostBoundaries(Impl::kFused) ||
               ReadsHostBoundaries(Impl::kFusedSuite));
  EXPECT_EQ(GraphCapturable(Impl::kFusedSuite), true);
  EXPECT_EQ(GraphCapturable(Impl::kChain), false);
}

TEST(SuiteInterface, RejectsBadSteps) {
  CaseOptions o;
  o.seed = 3;
  CaseBatch b = MustMake(SeedCase::kDecode, o);
  CpuSuite suite;
  {
    BatchInputs in = b.Inputs();
    in.sizes.num_tokens = in.sizes.capacity + 1;
    EXPECT_EQ(suite.Run(Impl::kFusedSuite, in).status().code(), absl::StatusCode::kOutOfRange);
  }
  {
    BatchInputs in = b.Inputs();
    in.device.seq_lens = nullptr;
    EXPECT_EQ(suite.Run(Impl::kFused, in).status().code(), absl::StatusCode::kInvalidArgument);
  }
  {
    // The host total past N: the host-boundary implementations cannot size their copies.
    CaseBatch bad = b;
    bad.host_qsl.back() = bad.sizes.num_tokens + 1;
    EXPECT_EQ(suite.Run(Impl::kChain, bad.Inputs()).status().code(), absl::StatusCode::kOutOfRange);
    // fused-suite never reads the host view.
    const absl::StatusOr<SuiteRunResult> r = suite.Run(Impl::kFusedSuite, bad.Inputs());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->mismatches.empty());
  }
  {
    BatchInputs in = b.Inputs();
    in.host.query_start_loc = nullptr;
    EXPECT_EQ(suite.Run(Impl::kDeviceChain, in).status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(suite.Image(Impl::kCached).status().code(), absl::StatusCode::kFailedPrecondition);
  // A step that does not fit the persistent layout makes the CpuSuite re-allocate it.
  CaseOptions big = o;
  big.batch = 300;
  big.max_num_batched_tokens = 4096;
  const CaseBatch larger = MustMake(SeedCase::kVerify, big);
  const SuiteLayout before = suite.layout();
  const absl::StatusOr<SuiteRunResult> r = suite.Run(Impl::kFusedSuite, larger.Inputs());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->mismatches.empty()) << DescribeMismatches(r->mismatches);
  EXPECT_GT(suite.layout().max_reqs, before.max_reqs);
}

TEST(SuiteLayoutTest, FitsAndBounds) {
  const ModelConsts consts;
  const SuiteLayout l = MakeSuiteLayout(512, 64, 40, consts);
  EXPECT_EQ(l.token_capacity, 512);
  EXPECT_EQ(l.bt_out_stride, 40);
  EXPECT_EQ(l.window, 128);
  EXPECT_EQ(l.max_segments, 64 + 1);
  EXPECT_EQ(l.arange_len, 512);
  BatchSizes s;
  s.num_reqs = 64;
  s.num_tokens = 500;
  s.num_decodes = 10;
  s.num_decode_tokens = 10;
  s.capacity = 512;
  s.bt_width = 40;
  s.bt_stride = 45;
  EXPECT_TRUE(CheckFits(l, s, consts).ok()) << CheckFits(l, s, consts);
  s.capacity = 513;
  EXPECT_EQ(CheckFits(l, s, consts).code(), absl::StatusCode::kOutOfRange);
  s.capacity = 512;
  s.num_reqs = 65;
  EXPECT_EQ(CheckFits(l, s, consts).code(), absl::StatusCode::kOutOfRange);
  s.num_reqs = 64;
  s.bt_width = 41;
  EXPECT_EQ(CheckFits(l, s, consts).code(), absl::StatusCode::kOutOfRange);
  EXPECT_GT(SuiteScratchBytes(l), size_t{6} * 512 * 128 * 4);
  EXPECT_GT(SuiteStagingBytes(l), size_t{4} * 512 * 4);
}

// The fused-suite grid is planned from host sizes only: one block for the segmentation, 2 tokens
// per token block over max(N, R) items, 4 jobs x 256 tokens of slot blocks (MLA r1, MLA r2, ring,
// the indexer's ratio-2 slots), one block per (decode token, 1024
// block-table columns), 1024 entries of every tail region per tail block.
TEST(FusedSuiteGrid, PlannedFromHostSizes) {
  FusedSuiteParams p{};
  p.num_reqs = 16;
  p.num_tokens = 16;
  p.num_decodes = 16;
  p.num_decode_tokens = 16;
  p.capacity = 8192;
  p.bt_width = 1475;
  p.segment_len = 1024;
  p.max_segments = 8192 + 8 + 256;
  PlanFusedSuiteGrid(p);
  EXPECT_EQ(p.token_blocks, 8);
  EXPECT_EQ(p.slot_chunks, 1);
  EXPECT_EQ(p.slot_blocks, 4);
  EXPECT_EQ(p.row_chunks, 2);
  EXPECT_EQ(p.row_blocks, 32);
  EXPECT_EQ(p.seg_bound, 1);  // no prefill requests: ceil(16 / 1024) = 1
  EXPECT_EQ(p.tail_blocks, CeilDiv(8192 + 8 + 256 - 1, FusedSuiteKernel::kTailChunk));
  EXPECT_EQ(FusedSuiteKernel::Shape(p).grid, 1 + 8 + 4 + 32 + p.tail_blocks);
  EXPECT_EQ(FusedSuiteKernel::Shape(p).block, 256);
  // Zero-length requests outnumbering the tokens still get a per_req and compressed_seq_lens
  // writer: the token blocks cover R = 16 items.
  p.num_tokens = 3;
  p.num_decode_tokens = 3;
  p.num_decodes = 9;
  p.bt_width = 65;
  PlanFusedSuiteGrid(p);
  EXPECT_EQ(p.token_blocks, 8);
  EXPECT_EQ(p.row_blocks, 3);

}

}  // namespace
}  // namespace dspark
