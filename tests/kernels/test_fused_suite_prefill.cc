// fused-suite's prefill job (kernels/suite/fused_suite_prefill.cuh) in CPU emulation: SWA's
// prefill_gather_lens and both indexers' prefill chunks from its one launch, against the
// references (kernels/reference/swa_prefill.h, indexer_prefill_step.h), on the seed cases with
// prefills, on vLLM's own split cases (the plan the device walks is vLLM's expected one), on
// random layouts and budgets that plan many chunks and slices; its CPU path byte-identical to the
// per-thread emulation on whole buffers; one launch, and the variant without the job when the
// step has no prefill.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/grid.h"
#include "kernels/reference/indexer_prefill.h"
#include "kernels/reference/indexer_prefill_step.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/fused_suite_launch.cuh"
#include "kernels/suite/suite.h"
#include "kernels/suite/suite_impls.h"
#include "tests/kernels/prefill_step_util.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;
using suite_test::PrefillBudgets;
using suite_test::PathsOff;
using suite_test::HandStep;
using suite_test::Req;

// Runs fused-suite on `b` and expects every region, prefill metadata included, equal to the
// reference, from one kernel launch. Returns the reference.
SuiteReference ExpectExact(const CaseBatch& b, const ModelConsts& consts, const std::string& what,
                           SuiteImage* image = nullptr) {
  CpuSuite suite(consts);
  const BatchInputs in = b.Inputs();
  EXPECT_TRUE(suite.Prepare(in.sizes).ok()) << what;
  const SuiteReference want = ComputeSuiteReference(in, suite.layout(), consts);
  const absl::StatusOr<SuiteRunResult> r = suite.Run(Impl::kFusedSuite, in, &want);
  EXPECT_TRUE(r.ok()) << what << ": " << r.status();
  if (!r.ok()) return want;
  EXPECT_TRUE(r->mismatches.empty()) << what << "\n" << DescribeMismatches(r->mismatches);
  EXPECT_EQ(r->counters.Launches(), 1) << what;
  EXPECT_EQ(r->counters.kernels, 1) << what;
  if (image != nullptr) *image = *suite.Image(Impl::kFusedSuite);
  return want;
}

TEST(FusedSuitePrefill, SeedCasesWithPrefillsMatchTheReferenceUnderEveryBudget) {
  int multi_chunk = 0, sliced = 0;
  for (const ModelConsts& consts : {ModelConsts{}, PrefillBudgets(6000, 200000), PrefillBudgets(700, 5000)}) {
    for (SeedCase c : {SeedCase::kPrefill, SeedCase::kChunkedPrefill, SeedCase::kMixed}) {
      for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
        CaseOptions o = OptionsFor(seed);
        o.consts = consts;
        const CaseBatch b = MustMake(c, o);
        const std::string what = b.name + " seed " + std::to_string(seed) + " workspace " +
                                 std::to_string(consts.indexer_prefill_workspace);
        const SuiteReference want = ExpectExact(b, consts, what);
        ASSERT_GT(want.prefill[0].ks.size(), 0u) << what;
        ASSERT_EQ(want.swa_gather_lens.size(), static_cast<size_t>(b.sizes.num_reqs - b.sizes.num_decodes));
        multi_chunk += want.prefill[0].chunks > 1 && want.prefill[1].chunks > 1;
        // A sliced group repeats its cu_seq_lens: more entries than requests + chunks.
        sliced += want.prefill[0].cu_seq_lens.size() >
                  static_cast<size_t>(b.sizes.num_reqs - b.sizes.num_decodes + want.prefill[0].chunks);
      }
    }
  }
  EXPECT_GT(multi_chunk, 10);
  EXPECT_GT(sliced, 0);
}

// vLLM's test_split_indexer_prefill_chunks cases and its single-request overflow case (read_file
// id 58513177696; tests/kernels/test_prefill_metadata.cc checks the host plans against them),
// as prefill requests of a step (ratio 1's compressed rows are the sequence lengths): fused-suite's
// ratio-1 chunks are build_prefill_chunk_metadata's over vLLM's EXPECTED plan, concatenated, and
// every region equals the reference, with and without decode requests before the prefills.
TEST(FusedSuitePrefill, VllmSplitCasesGiveTheChunksOfVllmsExpectedPlan) {
  struct Case {
    std::vector<Req> prefills;
    int64_t workspace, max_logits_bytes;
    std::vector<ref::PrefillChunkSpec> expected;
  };
  std::vector<Case> cases = {
      {{{0, 0}}, 100, 1000, {}},
      {{{10, 100}, {10, 100}, {10, 100}}, 1000, 5000, {{0, 1, 0, 10}, {1, 2, 0, 10}, {2, 3, 0, 10}}},
      {{{5, 10}, {5, 10}, {5, 10}}, 100, 10000, {{0, 3, 0, 15}}},
      {{{1, 50}, {1, 50}, {1, 50}}, 50, 1000000, {{0, 1, 0, 1}, {1, 2, 0, 1}, {2, 3, 0, 1}}},
      {{{5, 10}, {5, 10}, {5, 10}}, 100, 1000, {{0, 2, 0, 10}, {2, 3, 0, 5}}},
  };
  Case overflow{{{100, 1000}, {5, 50}}, 2000, 1000, {}};
  for (int32_t i = 0; i < 100; ++i) overflow.expected.push_back({0, 1, i, i + 1});
  overflow.expected.push_back({1, 2, 0, 5});
  cases.push_back(overflow);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    for (const std::vector<Req>& decodes : {std::vector<Req>{}, std::vector<Req>{{1, 40}, {2, 9}}}) {
      const std::string what = "case " + std::to_string(i) + " decodes " + std::to_string(decodes.size());
      const ModelConsts consts = PrefillBudgets(c.workspace, c.max_logits_bytes / 4);
      // No padding request: one would join the last group (no rows, no query) and change vLLM's
      // expected request slices.
      const CaseBatch b = HandStep(decodes, c.prefills, /*pad_reqs=*/0, /*pad_tokens=*/3);
      SuiteImage image;
      ExpectExact(b, consts, what, &image);
      std::vector<int32_t> qlens, seq_lens;
      for (const Req& r : c.prefills) {
        qlens.push_back(r.q);
        seq_lens.push_back(r.seq);
      }
      ref::PrefillChunk want;  // the chunks of vLLM's expected plan, concatenated
      for (const ref::PrefillChunkSpec& s : c.expected) {
        const std::vector<int32_t> q(qlens.begin() + s.req_begin, qlens.begin() + s.req_end),
            sl(seq_lens.begin() + s.req_begin, seq_lens.begin() + s.req_end);
        int64_t total = 0;
        for (int32_t v : sl) total += v;
        if (total == 0) continue;
        const ref::PrefillChunk chunk = ref::IndexerPrefillChunk(q, sl, 1, s.query_begin, s.query_end);
        for (auto [dst, src] : {std::pair{&want.cu_seq_lens, &chunk.cu_seq_lens},
                                std::pair{&want.token_to_seq, &chunk.token_to_seq}, std::pair{&want.ks, &chunk.ks},
                                std::pair{&want.ke, &chunk.ke}})
          dst->insert(dst->end(), src->begin(), src->end());
      }
      const SuiteImage::Indexer& got = image.indexer[0];
      const auto head = [](const std::vector<int32_t>& v, size_t n) {
        return std::vector<int32_t>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
      };
      EXPECT_EQ(head(got.prefill_cu_seq_lens, want.cu_seq_lens.size()), want.cu_seq_lens) << what;
      // token_to_seq keeps its first prefill_rows rows (the buffer's length, 4 x capacity).
      const size_t rows = std::min(want.token_to_seq.size(), got.prefill_token_to_seq.size());
      EXPECT_EQ(head(got.prefill_token_to_seq, rows), head(want.token_to_seq, rows)) << what;
      EXPECT_EQ(head(got.prefill_ks, want.ks.size()), want.ks) << what;
      EXPECT_EQ(head(got.prefill_ke, want.ke.size()), want.ke) << what;
    }
  }
}

// Random layouts (fixed seed): zero-length and padding requests, empty contexts, decodes before
// the prefills or none, budgets from one KV row up; fused-suite equal to the reference, and its
// CPU path equal to the per-thread emulation on the whole buffers (poisoned alike, run back to
// back so cells of earlier steps count too).
TEST(FusedSuitePrefill, RandomLayoutsAndBudgetsMatchReferenceAndPerThreadEmulation) {
  std::mt19937_64 rng(20261202);
  const auto below = [&](int32_t n) { return n <= 0 ? 0 : static_cast<int32_t>(rng() % static_cast<uint64_t>(n)); };
  int64_t chunks = 0, cut = 0;
  for (int iter = 0; iter < 150; ++iter) {
    std::vector<Req> decodes, prefills;
    for (int32_t i = below(6); i > 0; --i) decodes.push_back({below(4), 8 + below(200)});
    for (int32_t i = 1 + below(24); i > 0; --i) {
      const int32_t q = below(5) == 0 ? 0 : 1 + below(below(3) == 0 ? 600 : 40);
      prefills.push_back({q, q + (below(3) == 0 ? 0 : below(below(4) == 0 ? 5000 : 300))});
    }
    const ModelConsts consts =
        PrefillBudgets(1 + below(below(2) == 0 ? 400 : 8000), 1 + below(below(2) == 0 ? 2000 : 400000));
    const CaseBatch b = HandStep(decodes, prefills, below(3), below(9));
    const std::string what = "iteration " + std::to_string(iter);
    SuiteImage fast;
    const SuiteReference want = ExpectExact(b, consts, what, &fast);
    chunks += want.prefill[0].chunks + want.prefill[1].chunks;
    CpuSuite slow(consts);
    {
      PathsOff off;
      const absl::StatusOr<SuiteRunResult> r = slow.Run(Impl::kFusedSuite, b.Inputs());
      ASSERT_TRUE(r.ok()) << what << ": " << r.status();
      EXPECT_TRUE(r->mismatches.empty()) << what << "\n" << DescribeMismatches(r->mismatches);
    }
    EXPECT_TRUE(*slow.Image(Impl::kFusedSuite) == fast) << what << ": the CPU path changed a cell";
    cut += ref::IndexerPrefillStep(b.sizes, b.Inputs().device, 1, consts, INT64_MAX).token_to_seq.size() >
           want.prefill[0].token_to_seq.size();
  }
  EXPECT_GT(chunks, 1000);
  EXPECT_GT(cut, 0) << "some steps must pass prefill_rows, where token_to_seq is cut";
}

// A step without prefills launches the kernel without the prefill job, one with them the job's
// variant, R - nd blocks more, still one launch.
TEST(FusedSuitePrefill, OnlyStepsWithPrefillsCarryTheJobsBlocks) {
  CpuSuite suite;
  for (SeedCase c : kAllSeedCases) {
    const CaseBatch b = MustMake(c, OptionsFor(1));
    ASSERT_TRUE(suite.Prepare(b.sizes).ok());
    SuiteStep s;
    const BatchInputs in = b.Inputs();
    s.in = &in;
    s.layout = suite.layout();
    s.consts = ModelConsts{};
    const FusedSuiteParams p = MakeFusedSuiteParams(s);
    EXPECT_EQ(p.prefill_blocks, b.sizes.num_reqs - b.sizes.num_decodes) << b.name;
    LaunchShape shape{};
    LaunchFusedSuiteWith(p, MakeFusedSuitePrefillParams(s), [&](const auto& k, LaunchShape sh) {
      EXPECT_EQ(sizeof(k) == sizeof(FusedSuiteParams), p.prefill_blocks == 0) << b.name;
      shape = sh;
    });
    EXPECT_EQ(shape.grid, FusedSuiteKernel::Shape(p).grid + p.prefill_blocks) << b.name;
  }
}

}  // namespace
}  // namespace dspark
