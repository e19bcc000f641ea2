// The DSpark draft step's non-causal SWA rows (vLLM's _compute_dspark_noncausal_swa_indices_kernel,
// docs/design.md s.3), and #57207's prefill_segment_max_query_len, through every implementation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/reference/swa_noncausal.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/suite.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;

TEST(DraftSwa, WidthIsVllmsIndexWidth) {
  EXPECT_EQ(ref::DsparkSwaIndexWidth(128, 5), 192);
  EXPECT_EQ(ref::DsparkSwaIndexWidth(128, 0), 128);
  EXPECT_EQ(ref::DsparkSwaIndexWidth(64, 1), 128);
  EXPECT_EQ(MakeSuiteLayout(16, 4, 8, ModelConsts{}).noncausal_width, 192);
}

// One request by hand: prefix 200, K = 5 query tokens, W = 128, 64-token blocks. Every token of
// the block sees [72, 205): 133 cells, the future query tokens included; an unstored token
// (slot_mapping -1) is invalid: length 0, a row of -1.
TEST(DraftSwa, ReferenceByHand) {
  const std::vector<int32_t> qsl = {0, 5};
  const std::vector<int32_t> seq = {205};
  std::vector<int32_t> bt = {11, 12, 13, 14};
  const std::vector<int64_t> slots = {1, 2, -1, 4, 5, 6};
  BatchSizes z;
  z.num_reqs = 1;
  z.num_tokens = 6;
  z.num_decodes = 1;
  z.num_decode_tokens = 6;
  z.capacity = 8;
  z.bt_width = 4;
  z.bt_stride = 4;
  const DeviceBatch d{qsl.data(), seq.data(), bt.data(), slots.data()};
  const ref::SwaNonCausalRows rows = ref::SwaNonCausal(z, d, 128, 192, 64);
  EXPECT_EQ(rows.lens, (std::vector<int32_t>{133, 133, 0, 133, 133, 0}));
  for (int t : {0, 4}) {
    const int32_t* row = &rows.indices[t * 192];
    EXPECT_EQ(row[0], 12 * 64 + 8) << "position 72";
    EXPECT_EQ(row[55], 12 * 64 + 63) << "position 127";
    EXPECT_EQ(row[56], 13 * 64 + 0) << "position 128";
    EXPECT_EQ(row[132], 14 * 64 + 12) << "position 204, the block's last (future) token";
    for (int j = 133; j < 192; ++j) ASSERT_EQ(row[j], -1) << j;
  }
  for (int j = 0; j < 192; ++j) ASSERT_EQ(rows.indices[2 * 192 + j], -1);
  for (int j = 0; j < 192; ++j) ASSERT_EQ(rows.indices[5 * 192 + j], -1) << "graph padding";
}

// vLLM's draft layout is uniform on the host and the device (qsl_cpu = clamp(arange, R) * K in
// _build_draft_attn_metadata; DSparkSpeculator drafts K tokens per request), and the builders
// read the host seq_lens bound for prefill rows only: every state is exact on the draft case,
// non-causal rows included. The project's adaptive_draft case (a device split the host does not
// know, which vLLM's DSpark does not make) breaks only the host mappings of (a) and (b).
TEST(DraftSwa, EveryStateExactOnVllmsDraftLayout) {
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    for (SeedCase c : {SeedCase::kDraft, SeedCase::kAdaptiveDraft}) {
      const CaseBatch b = MustMake(c, OptionsFor(seed));
      ASSERT_FALSE(b.causal) << b.name;
      CpuSuite suite;
      for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
        const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
        ASSERT_TRUE(r.ok()) << r.status();
        const bool host_split_stale = b.host_qsl != b.qsl;
        if (c == SeedCase::kDraft) ASSERT_FALSE(host_split_stale) << b.name;
        // Allowed: the old indexer chain's padding residue ((a)-(c) zero only column 0 of padding
        // rows), and stale-host where the host split is stale, for the host-split readers.
        for (const FieldMismatch& m : r->mismatches) {
          const bool residue = m.kind == MismatchKind::kPaddingResidue && m.field == "bt_out_padding";
          const bool stale = ReadsHostBoundaries(impl) && host_split_stale && m.kind == MismatchKind::kStaleHost;
          EXPECT_TRUE(residue || stale) << b.name << " " << ImplName(impl) << "\n" << DescribeMismatches(r->mismatches);
          if (c == SeedCase::kDraft) EXPECT_NE(m.kind, MismatchKind::kStaleHost) << b.name << " " << ImplName(impl);
        }
        // The non-causal rows, cell by cell against the reference.
        absl::StatusOr<SuiteImage> im = suite.Image(impl);
        ASSERT_TRUE(im.ok());
        const ref::SwaNonCausalRows want = ref::SwaNonCausal(b.sizes, b.Inputs().device, 128, 192, 64);
        if (!ReadsHostBoundaries(impl) || !host_split_stale) {
          const std::vector<int32_t> got(im->swa_indices_noncausal.begin(),
                                         im->swa_indices_noncausal.begin() + want.indices.size());
          EXPECT_EQ(got, want.indices) << b.name << " " << ImplName(impl);
        }
      }
    }
  }
}

// The non-causal kernel replaces the causal one (docs/states.md s.2.2): a draft step issues
// the same ops in every implementation as the same layout built causal.
TEST(DraftSwa, NonCausalIssuesTheSameOps) {
  CaseOptions o;
  o.seed = 4;
  CaseBatch b = MustMake(SeedCase::kDraft, o);
  b.full_graph = false;  // the ops of one build, not vllm-0.34's recorded causal decode step
  CpuSuite suite;
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    b.causal = false;
    const absl::StatusOr<SuiteRunResult> draft = suite.Run(impl, b.Inputs());
    b.causal = true;
    const absl::StatusOr<SuiteRunResult> causal = suite.Run(impl, b.Inputs());
    ASSERT_TRUE(draft.ok() && causal.ok());
    EXPECT_EQ(draft->counters.Launches(), causal->counters.Launches()) << ImplName(impl);
    EXPECT_EQ(draft->counters.kernels, causal->counters.kernels) << ImplName(impl);
  }
}

// vLLM's test_segments_preserve_positions_and_replay_updates layout (#57207): queries
// [1, 1, 2051, 19, 1024], prefixes [5000, 9000, 3, 0, 99000], 2 decodes. The longest segment
// (prefill_segment_max_query_len) is 1024 in FP8 and 2051 in BF16, in every implementation.
CaseBatch Vllm57207Batch(bool fp8) {
  const std::vector<int32_t> q = {1, 1, 2051, 19, 1024}, prefix = {5000, 9000, 3, 0, 99000};
  CaseBatch b;
  b.name = fp8 ? "vllm_57207_fp8" : "vllm_57207_bf16";
  b.fp8_prefill = fp8;
  b.qsl = {0};
  for (size_t r = 0; r < q.size(); ++r) {
    b.qsl.push_back(b.qsl.back() + q[r]);
    b.seq_lens.push_back(prefix[r] + q[r]);
  }
  BatchSizes& z = b.sizes;
  z.num_reqs = 5;
  z.num_tokens = b.qsl.back();
  z.num_decodes = 2;
  z.num_decode_tokens = 2;
  z.capacity = 4096;
  z.bt_width = (100024 + 63) / 64;
  z.bt_stride = z.bt_width;
  for (int32_t r = 0; r < 5; ++r)
    for (int32_t j = 0; j < z.bt_width; ++j) b.block_table.push_back(r * 2000 + j + 1);
  for (int32_t r = 0; r < 5; ++r)
    for (int32_t t = b.qsl[r]; t < b.qsl[r + 1]; ++t) {
      const int32_t pos = prefix[r] + (t - b.qsl[r]);
      b.slot_mapping.push_back(int64_t{b.block_table[r * z.bt_stride + pos / 64]} * 64 + pos % 64);
    }
  b.host_qsl = b.qsl;
  b.host_seq_lens = b.seq_lens;
  return b;
}

// Every implementation that builds the segmentation gets vLLM's answer; the released states
// (which have no #57207) build it only under the labelled what-if.
TEST(PrefillSegmentMaxQueryLen, Vllm57207TestCaseEveryImpl) {
  for (bool fp8 : {true, false}) {
    const CaseBatch b = Vllm57207Batch(fp8);
    ModelConsts what_if;
    what_if.what_if_57207 = true;
    CpuSuite suite(what_if);
    for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
      const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_TRUE(r->mismatches.empty()) << b.name << " " << ImplName(impl) << "\n"
                                         << DescribeMismatches(r->mismatches);
      absl::StatusOr<SuiteImage> im = suite.Image(impl);
      ASSERT_TRUE(im.ok());
      EXPECT_EQ(im->seg_count[0], fp8 ? 5 : 3) << b.name << " " << ImplName(impl);
      EXPECT_EQ(im->seg_count[1], fp8 ? 1024 : 2051) << b.name << " " << ImplName(impl);
    }
  }
}

// Without the what-if, a released state writes no segment cell (its buffers keep the poison)
// and is not compared on them; the states that do build it are.
TEST(PrefillSegmentMaxQueryLen, ReleasedStatesBuildNoSegments) {
  const CaseBatch b = Vllm57207Batch(true);
  CpuSuite suite;
  int builders = 0;
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->mismatches.empty()) << ImplName(impl) << "\n" << DescribeMismatches(r->mismatches);
    absl::StatusOr<SuiteImage> im = suite.Image(impl);
    ASSERT_TRUE(im.ok());
    if (impl.info().traits.builds_prefill_segments) {
      ++builders;
      EXPECT_EQ(im->seg_count[0], 5) << ImplName(impl);
    } else {
      EXPECT_EQ(im->seg_count[0], -99) << ImplName(impl);
    }
  }
  EXPECT_GE(builders, 1);
  EXPECT_FALSE(Impl(Impl::kFused).info().traits.builds_prefill_segments);
  EXPECT_FALSE(Impl(Impl::kVllm034).info().traits.builds_prefill_segments);
}

// A corrupted max query len is found, as a bug, in the segment fields.
TEST(PrefillSegmentMaxQueryLen, ComparedAndClassified) {
  const CaseBatch b = Vllm57207Batch(true);
  CpuSuite suite;
  ASSERT_TRUE(suite.Run(Impl::kFusedSuite, b.Inputs()).ok());
  absl::StatusOr<SuiteImage> im = suite.Image(Impl::kFusedSuite);
  ASSERT_TRUE(im.ok());
  im->seg_count[1] = 1023;
  const std::vector<FieldMismatch> ms =
      CompareSuite(Impl::kFusedSuite, b.Inputs(), suite.layout(), ModelConsts{}, im->View());
  ASSERT_EQ(ms.size(), 1u) << DescribeMismatches(ms);
  EXPECT_EQ(ms[0].field, "seg_max_query_len");
  EXPECT_EQ(ms[0].expected, 1024);
  EXPECT_EQ(ms[0].actual, 1023);
  EXPECT_EQ(ms[0].index, 1);
  EXPECT_EQ(ms[0].kind, MismatchKind::kBug);
}

}  // namespace
}  // namespace dspark
