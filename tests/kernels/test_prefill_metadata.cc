// The prefill metadata of a step, compared like every other output (kernels/suite/regions.h):
// SWA's prefill_gather_lens (ComputePrefillMetadataKernel) and the indexer's prefill chunks
// (split_indexer_prefill_chunks + build_prefill_chunk_metadata, vLLM's indexer.py), against the
// references written from vLLM's semantics (kernels/reference/swa_prefill.h,
// kernels/reference/indexer_prefill_step.h), with vLLM's own test cases of the split.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/reference/indexer_prefill_step.h"
#include "kernels/reference/swa_prefill.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/suite.h"
#include "kernels/suite/vllm_ops.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using Spec = ref::PrefillChunkSpec;

struct SplitCase {
  std::vector<int64_t> kv_rows, query_lens;
  int64_t workspace, max_logits_bytes;
  std::vector<Spec> expected;
};

// The same plan from the suite's op (vllm_ops::SplitIndexerPrefillChunks, what (a)-(d) run).
std::vector<Spec> OpsPlan(const SplitCase& c) {
  std::vector<Spec> out;
  for (const auto& [reqs, q] :
       vllm_ops::SplitIndexerPrefillChunks(c.kv_rows, c.query_lens, c.workspace, c.max_logits_bytes / 4))
    out.push_back({reqs.first, reqs.second, q.first, q.second});
  return out;
}

// vLLM's test_split_indexer_prefill_chunks cases and
// test_split_indexer_prefill_chunks_single_request_overflow (tests/v1/attention, read_file id
// 58513177696), budgets in bytes as vLLM passes them.
TEST(PrefillChunkPlan, VllmTestCases) {
  std::vector<SplitCase> cases = {
      {{0}, {0}, 100, 1000, {}},
      {{100, 100, 100}, {10, 10, 10}, 1000, 5000, {{0, 1, 0, 10}, {1, 2, 0, 10}, {2, 3, 0, 10}}},
      {{10, 10, 10}, {5, 5, 5}, 100, 10000, {{0, 3, 0, 15}}},
      {{50, 50, 50}, {1, 1, 1}, 50, 1000000, {{0, 1, 0, 1}, {1, 2, 0, 1}, {2, 3, 0, 1}}},
      {{10, 10, 10}, {5, 5, 5}, 100, 1000, {{0, 2, 0, 10}, {2, 3, 0, 5}}},
  };
  SplitCase overflow{{1000, 50}, {100, 5}, 2000, 1000, {}};
  for (int32_t i = 0; i < 100; ++i) overflow.expected.push_back({0, 1, i, i + 1});
  overflow.expected.push_back({1, 2, 0, 5});
  cases.push_back(overflow);
  for (size_t i = 0; i < cases.size(); ++i) {
    const SplitCase& c = cases[i];
    EXPECT_EQ(ref::SplitPrefillChunks(c.kv_rows, c.query_lens, c.workspace, c.max_logits_bytes / 4), c.expected)
        << "case " << i;
    EXPECT_EQ(OpsPlan(c), c.expected) << "case " << i;
  }
}

// Random request lists and small budgets (fixed seed): the reference and the suite's op agree,
// every query token lands in exactly one slice, and a group of several requests is one slice
// (the bound behind PrefillChunkCuBound).
TEST(PrefillChunkPlan, RandomizedReferenceMatchesOpsAndCoversEveryQueryOnce) {
  std::mt19937_64 rng(20261201);
  for (int iter = 0; iter < 2000; ++iter) {
    SplitCase c;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      c.kv_rows.push_back(static_cast<int64_t>(rng() % 400));
      c.query_lens.push_back(static_cast<int64_t>(rng() % 60));
    }
    c.workspace = 1 + static_cast<int64_t>(rng() % 1500);
    c.max_logits_bytes = 4 * (1 + static_cast<int64_t>(rng() % 20000));
    const std::vector<Spec> plan = ref::SplitPrefillChunks(c.kv_rows, c.query_lens, c.workspace, c.max_logits_bytes / 4);
    ASSERT_EQ(OpsPlan(c), plan) << "iteration " << iter;
    std::vector<int64_t> covered(static_cast<size_t>(n), 0);
    int64_t cu_entries = 0, query_total = 0;
    for (const Spec& s : plan) {
      if (s.req_end - s.req_begin > 1) EXPECT_EQ(s.query_begin, 0) << "iteration " << iter;
      covered[s.req_begin] += s.query_end - s.query_begin;
      cu_entries += s.req_end - s.req_begin + 1;
    }
    for (int64_t q : c.query_lens) query_total += q;
    EXPECT_LE(cu_entries, PrefillChunkCuBound(n, static_cast<int32_t>(query_total))) << "iteration " << iter;
  }
}

// One decode request, then two prefills: gather lengths and ratio-2 chunk metadata by hand.
TEST(PrefillMetadataByHand, GatherLensAndOneChunk) {
  const std::vector<int32_t> qsl = {0, 1, 5, 105}, seq = {50, 4, 300};
  const std::vector<int32_t> bt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const std::vector<int64_t> slots(105, 0);
  BatchSizes z;
  z.num_reqs = 3;
  z.num_tokens = 105;
  z.num_decodes = 1;
  z.num_decode_tokens = 1;
  z.capacity = 105;
  z.bt_width = 5;
  z.bt_stride = 5;
  const DeviceBatch d{qsl.data(), seq.data(), bt.data(), slots.data()};
  // q + min(prefix, W - 1): 4 + min(0, 127) and 100 + min(200, 127).
  EXPECT_EQ(ref::SwaPrefillGatherLens(z, d, 128), (std::vector<int32_t>{4, 227}));
  const ref::IndexerPrefillChunks c = ref::IndexerPrefillStep(z, d, 2, ModelConsts{}, 1 << 20);
  EXPECT_EQ(c.chunks, 1);
  EXPECT_EQ(c.cu_seq_lens, (std::vector<int32_t>{0, 2, 152}));
  ASSERT_EQ(c.ks.size(), 104u);
  ASSERT_EQ(c.ke.size(), 104u);
  EXPECT_EQ(std::vector<int32_t>(c.ke.begin(), c.ke.begin() + 4), (std::vector<int32_t>{0, 1, 1, 2}));
  EXPECT_EQ(c.ks[3], 0);
  EXPECT_EQ(c.ks[4], 2);
  EXPECT_EQ(c.ke[4], 2 + 201 / 2);  // position 200 sees (200 + 1) // 2 compressed rows
  EXPECT_EQ(c.ke[103], 152);
  ASSERT_EQ(c.token_to_seq.size(), 152u);
  EXPECT_EQ(c.token_to_seq[1], 0);
  EXPECT_EQ(c.token_to_seq[2], 1);
  // token_to_seq keeps the first max_rows rows only.
  EXPECT_EQ(ref::IndexerPrefillStep(z, d, 2, ModelConsts{}, 3).token_to_seq, (std::vector<int32_t>{0, 0, 1}));
}

// Every implementation that writes the prefill metadata matches the reference with budgets small
// enough that the plan has several request groups and query slices; the other outputs of
// fused-suite match the same reference (so (a)-(d) and fused-suite agree wherever both write).
TEST(PrefillMetadataSuite, EveryImplMatchesWithSeveralChunksAndSlices) {
  ModelConsts consts;
  consts.indexer_prefill_workspace = 6000;  // [KV rows]
  consts.indexer_max_logits = 200000;        // [elements]
  int multi_chunk_steps = 0, sliced_steps = 0;
  for (SeedCase sc : {SeedCase::kPrefill, SeedCase::kChunkedPrefill, SeedCase::kMixed}) {
    for (uint64_t seed : {1u, 2u, 3u, 7u}) {
      CaseOptions o = suite_test::OptionsFor(seed);
      o.max_context = 9000;
      o.consts = consts;
      const CaseBatch b = suite_test::MustMake(sc, o);
      const BatchInputs in = b.Inputs();
      CpuSuite suite(consts);
      ASSERT_TRUE(suite.Prepare(in.sizes).ok());
      const SuiteReference want = ComputeSuiteReference(in, suite.layout(), consts);
      ASSERT_GT(want.prefill[0].ks.size(), 0u) << b.name;
      multi_chunk_steps += want.prefill[0].chunks > 1;
      for (const ref::PrefillChunkSpec& s : ref::SplitPrefillChunks(
               [&] {
                 std::vector<int64_t> rows;
                 for (int32_t r = b.sizes.num_decodes; r < b.sizes.num_reqs; ++r) rows.push_back(b.seq_lens[r]);
                 return rows;
               }(),
               [&] {
                 std::vector<int64_t> q;
                 for (int32_t r = b.sizes.num_decodes; r < b.sizes.num_reqs; ++r) q.push_back(b.qsl[r + 1] - b.qsl[r]);
                 return q;
               }(),
               consts.indexer_prefill_workspace, consts.indexer_max_logits))
        if (s.query_begin > 0) {
          ++sliced_steps;
          break;
        }
      for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
        absl::StatusOr<SuiteRunResult> r = suite.Run(impl, in, &want);
        ASSERT_TRUE(r.ok()) << b.name << " " << ImplName(impl) << ": " << r.status();
        // Only what vLLM's state would give: stale-host cells where it reads a stale host split,
        // padding residue of the old indexer chain; never a bug.
        for (const FieldMismatch& m : r->mismatches) {
          EXPECT_NE(m.kind, MismatchKind::kBug) << b.name << " " << ImplName(impl) << "\n"
                                                << DescribeMismatches(r->mismatches);
          if (!b.HostStale()) EXPECT_EQ(m.kind, MismatchKind::kPaddingResidue) << b.name << " " << ImplName(impl);
        }
      }
    }
  }
  EXPECT_GT(multi_chunk_steps, 0);
  EXPECT_GT(sliced_steps, 0);
}

}  // namespace
}  // namespace dspark
