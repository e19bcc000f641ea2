// fused-suite's prefill job on the GPU (kernels/suite/fused_suite_prefill.cuh): SWA's
// prefill_gather_lens and both indexers' prefill chunks from its one launch equal the reference
// and the CPU emulation's buffers, eager and replayed from a captured graph of one node, with the
// default budgets and with budgets small enough for many chunks and query slices; a step without
// prefills still captures one node. Steps of many prefill requests (the blocks' in-block plan, and
// past kSharedQslCap the walk) equal the reference and the CPU emulation too. Skips without a
// device (the CPU tests run the same bodies: tests/kernels/test_fused_suite_prefill*.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/suite/cases.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/suite.h"
#include "tests/common/whole_buffer_check.cuh"
#include "tests/common/gpu_suite_capacity.cuh"
#include "tests/common/gpu_test_util.cuh"
#include "tests/kernels/prefill_step_util.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;
using suite_test::PrefillBudgets;

std::unique_ptr<GpuSuite> MakeSuite(const ModelConsts& consts) {
  absl::StatusOr<std::unique_ptr<GpuSuite>> s = GpuSuite::Create(suite_test::TestCapacity(), consts);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

// The GPU image's prefill fields equal the reference over its regions, and the CPU emulation's
// image cell for cell (token_to_seq over the rows both keep: the CPU layout's prefill_rows follow
// the step's capacity).
void ExpectSamePrefillCells(const SuiteImage& gpu, const SuiteImage& cpu, const SuiteReference& want,
                            const std::string& what) {
  const auto head = [](const std::vector<int32_t>& v, size_t n) {
    return std::vector<int32_t>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
  };
  EXPECT_EQ(head(gpu.swa_gather_lens, want.swa_gather_lens.size()), want.swa_gather_lens) << what;
  for (int k = 0; k < 2; ++k) {
    const ref::IndexerPrefillChunks& w = want.prefill[k];
    const SuiteImage::Indexer &g = gpu.indexer[k], &c = cpu.indexer[k];
    EXPECT_EQ(head(g.prefill_cu_seq_lens, w.cu_seq_lens.size()), w.cu_seq_lens) << what << " ratio " << k + 1;
    EXPECT_EQ(head(g.prefill_token_to_seq, w.token_to_seq.size()), w.token_to_seq) << what << " ratio " << k + 1;
    EXPECT_EQ(head(g.prefill_ks, w.ks.size()), w.ks) << what << " ratio " << k + 1;
    EXPECT_EQ(head(g.prefill_ke, w.ke.size()), w.ke) << what << " ratio " << k + 1;
    EXPECT_EQ(head(g.prefill_cu_seq_lens, w.cu_seq_lens.size()), head(c.prefill_cu_seq_lens, w.cu_seq_lens.size()))
        << what;
    EXPECT_EQ(head(g.prefill_ks, w.ks.size()), head(c.prefill_ks, w.ks.size())) << what;
    EXPECT_EQ(head(g.prefill_ke, w.ke.size()), head(c.prefill_ke, w.ke.size())) << what;
    const size_t rows = std::min(w.token_to_seq.size(), c.prefill_token_to_seq.size());
    EXPECT_EQ(head(g.prefill_token_to_seq, rows), head(c.prefill_token_to_seq, rows)) << what;
  }
}

TEST(FusedSuitePrefillGpu, PrefillRegionsEqualReferenceEagerAndReplayed) {
  DS_REQUIRE_GPU();
  int multi_chunk = 0;
  for (const ModelConsts& consts : {ModelConsts{}, PrefillBudgets(6000, 200000), PrefillBudgets(700, 5000)}) {
    std::unique_ptr<GpuSuite> gpu = MakeSuite(consts);
    ASSERT_NE(gpu, nullptr);
    for (SeedCase c : {SeedCase::kPrefill, SeedCase::kChunkedPrefill, SeedCase::kMixed, SeedCase::kDecode}) {
      for (uint64_t seed : {1u, 2u, 3u, 5u}) {
        CaseOptions o = OptionsFor(seed);
        o.consts = consts;
        const CaseBatch b = MustMake(c, o);
        const std::string what = b.name + " seed " + std::to_string(seed) + " workspace " +
                                 std::to_string(consts.indexer_prefill_workspace);
        ASSERT_TRUE(gpu->Stage(b.Inputs()).ok()) << what;
        CpuSuite cpu(consts);
        ASSERT_TRUE(cpu.Prepare(b.sizes).ok());
        const SuiteReference want = ComputeSuiteReference(b.Inputs(), gpu->layout(), consts);
        multi_chunk += want.prefill[0].chunks > 1;
        const absl::StatusOr<SuiteRunResult> on_cpu = cpu.Run(Impl::kFusedSuite, b.Inputs());
        ASSERT_TRUE(on_cpu.ok()) << on_cpu.status();
        const absl::StatusOr<SuiteImage> cpu_image = cpu.Image(Impl::kFusedSuite);
        ASSERT_TRUE(cpu_image.ok());
        for (bool replay : {false, true}) {
          SCOPED_TRACE(what + (replay ? " replayed" : " eager"));
          if (replay) {
            ASSERT_TRUE(gpu->Capture(Impl::kFusedSuite).ok());
            const absl::StatusOr<SuiteGraph::NodeCounts> nodes = gpu->GraphNodes(Impl::kFusedSuite);
            ASSERT_TRUE(nodes.ok());
            EXPECT_EQ(nodes->total, 1u);
            ASSERT_TRUE(gpu->Replay(Impl::kFusedSuite).ok());
          } else {
            ASSERT_TRUE(gpu->Run(Impl::kFusedSuite).ok());
          }
          const absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*gpu, Impl::kFusedSuite);
          ASSERT_TRUE(r.ok()) << r.status();
          // Every region, the prefill metadata included (ImplTraits::writes_prefill_metadata).
          EXPECT_TRUE(r->mismatches.empty()) << DescribeMismatches(r->mismatches);
          EXPECT_EQ(r->counters.Launches(), 1);
          const absl::StatusOr<SuiteImage> image = gpu->DownloadImage(Impl::kFusedSuite);
          ASSERT_TRUE(image.ok());
          if (b.sizes.num_reqs > b.sizes.num_decodes) ExpectSamePrefillCells(*image, *cpu_image, want, what);
        }
      }
    }
  }
  EXPECT_GT(multi_chunk, 0);
}

// Steps of many prefill requests, the CPU test's (suite_test::ManyPrefillStep, as
// FusedSuitePrefill.ManyPrefillRequestsMatchReferenceAndPerThreadEmulation runs them): a few
// hundred, just under kSharedQslCap (the in-block plan's longest chains), past it (the walk's
// mode), a workspace past INT32_MAX (the walk's mode too); every region equals the reference and
// the CPU emulation's prefill cells, eager and replayed.
TEST(FusedSuitePrefillGpu, ManyPrefillRequestsEqualReferenceEagerAndReplayed) {
  DS_REQUIRE_GPU();
  std::mt19937_64 rng(suite_test::kManyPrefillSeed);
  GpuSuiteCapacity capacity;
  capacity.max_tokens = suite_test::kManyPrefillMaxTokens;
  capacity.max_reqs = suite_test::kManyPrefillMaxReqs;
  capacity.max_bt_stride = suite_test::kManyPrefillMaxBtStride;
  for (int iter = 0; iter < suite_test::kManyPrefillSteps; ++iter) {
    const suite_test::ManyPrefillCase c = suite_test::ManyPrefillStep(rng, iter);
    const CaseBatch& b = c.batch;
    const ModelConsts& consts = c.consts;
    const std::string& what = c.what;
    ASSERT_LE(b.sizes.capacity, capacity.max_tokens) << what;
    ASSERT_LE(b.sizes.num_reqs, capacity.max_reqs) << what;
    ASSERT_LE(b.sizes.bt_stride, capacity.max_bt_stride) << what;
    absl::StatusOr<std::unique_ptr<GpuSuite>> made = GpuSuite::Create(capacity, consts);
    ASSERT_TRUE(made.ok()) << made.status();
    GpuSuite& gpu = **made;
    ASSERT_TRUE(gpu.Stage(b.Inputs()).ok()) << what;
    CpuSuite cpu(consts);
    ASSERT_TRUE(cpu.Prepare(b.sizes).ok());
    const SuiteReference want = ComputeSuiteReference(b.Inputs(), gpu.layout(), consts);
    ASSERT_TRUE(cpu.Run(Impl::kFusedSuite, b.Inputs()).ok()) << what;
    const absl::StatusOr<SuiteImage> cpu_image = cpu.Image(Impl::kFusedSuite);
    ASSERT_TRUE(cpu_image.ok());
    for (bool replay : {false, true}) {
      SCOPED_TRACE(what + (replay ? " replayed" : " eager"));
      if (replay) {
        ASSERT_TRUE(gpu.Capture(Impl::kFusedSuite).ok());
        ASSERT_TRUE(gpu.Replay(Impl::kFusedSuite).ok());
      } else {
        ASSERT_TRUE(gpu.Run(Impl::kFusedSuite).ok());
      }
      const absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(gpu, Impl::kFusedSuite);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_TRUE(r->mismatches.empty()) << DescribeMismatches(r->mismatches);
      const absl::StatusOr<SuiteImage> image = gpu.DownloadImage(Impl::kFusedSuite);
      ASSERT_TRUE(image.ok());
      ExpectSamePrefillCells(*image, *cpu_image, want, what);
    }
  }
}

}  // namespace
}  // namespace dspark
