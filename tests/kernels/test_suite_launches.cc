// Launch counts of every registered vLLM state in every seed case (docs/states.md s.2.7), and
// the stale-host count of docs/design.md s.8's adaptive layout, under CPU emulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "kernels/suite/cases.h"
#include "kernels/suite/suite.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;

bool HasKind(const std::vector<FieldMismatch>& ms, MismatchKind kind) {
  return std::any_of(ms.begin(), ms.end(), [&](const FieldMismatch& m) { return m.kind == kind; });
}

// Launch counts of one suite, per implementation, for batch-16 decode (the seed's headline
// case): every counted operation is one graph node on the GPU.
TEST(SuiteLaunchCounts, Batch16Decode) {
  CaseOptions o;
  o.seed = 1;
  const CaseBatch b = MustMake(SeedCase::kDecode, o);
  ASSERT_EQ(b.sizes.num_tokens, 16);
  ASSERT_EQ(b.sizes.num_decode_tokens, 16);
  CpuSuite suite;
  std::map<Impl, OpCounters> counts;
  for (Impl impl : AllImpls()) {
    const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->mismatches.empty()) << ImplName(impl) << "\n" << DescribeMismatches(r->mismatches);
    counts[impl] = r->counters;
  }
  // fused-suite: one kernel, nothing else.
  EXPECT_EQ(counts[Impl::kFusedSuite].Launches(), 1);
  EXPECT_EQ(counts[Impl::kFusedSuite].kernels, 1);
  // docs/states.md s.2.7, columns token map, SWA, MLA r1, MLA r2, ring, indexer r1, r2 (no
  // prefills, so no segment fields):
  //   (c) 8 + 4 + 0 + 3 + 1 + 28 + 33 = 77, the seed's "Before";
  //   (d) 1 + 3 + 0 + 3 + 1 + 3 + 6 = 17, the seed's "After" and vLLM 0.31.0-0.34.0 (the SWA
  //       validity mask in one launch; no compressed_seq_lens divide without prefills);
  //   (b) one host mapping (1 copy) instead of (c)'s 8 -> 70;
  //   (a) four builder mappings (SWA, MLA r1, MLA r2, ring; 1 copy each) -> 73.
  EXPECT_EQ(counts[Impl::kDeviceChain].Launches(), 77);
  EXPECT_EQ(counts[Impl::kDeviceChain].h2d_copies, 0);
  EXPECT_EQ(counts[Impl::kFused].Launches(), 17);
  EXPECT_EQ(counts[Impl::kFused].graph_launches, 0);  // 0.31.0-0.32.0 build eagerly
  // (e) vLLM 0.34.0 replays the recorded build of this FULL uniform-decode step: 1 graph launch
  // of 18 nodes, (d)'s 17 and the token map of the second branch (each branch builds its own).
  EXPECT_EQ(counts[Impl::kVllm034].graph_launches, 1);
  EXPECT_EQ(counts[Impl::kVllm034].Launches(), 18);
  EXPECT_EQ(counts[Impl::kCached].Launches(), 70);
  EXPECT_EQ(counts[Impl::kCached].h2d_copies, 1);
  EXPECT_EQ(counts[Impl::kChain].Launches(), 73);
  EXPECT_EQ(counts[Impl::kChain].h2d_copies, 4);
  for (Impl impl : AllImpls()) {
    EXPECT_EQ(counts[impl].d2h_copies, 0) << ImplName(impl);
    EXPECT_EQ(counts[impl].host_syncs, 0) << ImplName(impl);
    EXPECT_EQ(counts[impl].host_array_ops > 0, ReadsHostBoundaries(impl) || ReadsHostTotals(impl))
        << ImplName(impl);
  }
}

// The launch count of every implementation in every seed case (batch 16, seed 4, the default
// options: the cases `bench` and `verify` run). Columns: vllm-pre47474, vllm-47474,
// vllm-pre56562, vllm-0.31, vllm-0.34, fused-suite (docs/states.md s.2.7 explains the decode row,
// s.8 vllm-0.34's), then vllm-0.34's graph launches.
TEST(SuiteLaunchCounts, EveryCase) {
  const std::map<std::string, std::vector<int64_t>> expected = {
      // (c) = vllm-pre56562 is 77 at decode (the seed's Before), (d) = vllm-0.31 17 (0.31.0-0.34.0's
      // builders); (e) = vllm-0.34 replays the FULL uniform-decode step (decode) as one graph of 18
      // nodes, so is the uniform verify step (every request 1 + K tokens), and builds every other step
      // eagerly as (d) (adaptive
      // verification: max_query_len set; draft: the speculator's build; prefills). Padded
      // DSpark steps add the chain's 3 padding ops per indexer and the mapping's zero_ (83);
      // prefill steps add #57207's host-planned segmentation (10 ops) and 5 ops per indexer
      // prefill chunk (chunked prefill: long contexts make several chunks).
      {"prefill", {35, 32, 39, 31, 31, 1, 0}},
      {"chunked_prefill", {110, 107, 114, 106, 106, 1, 0}},
      {"mixed", {96, 93, 100, 40, 40, 1, 0}},
      {"decode", {73, 70, 77, 17, 18, 1, 1}},
      {"verify", {72, 69, 76, 17, 18, 1, 1}},
      {"adaptive_verify", {79, 76, 83, 17, 17, 1, 0}},
      {"draft", {79, 76, 83, 17, 17, 1, 0}},
      {"adaptive_draft", {79, 76, 83, 17, 17, 1, 0}},
  };
  for (SeedCase c : kAllSeedCases) {
    CaseOptions o;
    o.seed = 4;
    const CaseBatch b = MustMake(c, o);
    CpuSuite suite;
    std::vector<int64_t> launches;
    int64_t graph_launches = 0;
    for (Impl impl : {Impl::kChain, Impl::kCached, Impl::kDeviceChain, Impl::kFused, Impl::kVllm034,
                      Impl::kFusedSuite}) {
      const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_TRUE(r->mismatches.empty() || ReadsHostBoundaries(impl) || impl == Impl::kDeviceChain)
          << ImplName(impl) << " " << DescribeMismatches(r->mismatches);
      launches.push_back(r->counters.Launches());
      if (impl == Impl::kVllm034) graph_launches = r->counters.graph_launches;
      else EXPECT_EQ(r->counters.graph_launches, 0) << ImplName(impl);
    }
    launches.push_back(graph_launches);
    const std::string name(SeedCaseName(c));
    std::string row = "{\"" + name + "\", {";
    for (size_t k = 0; k < launches.size(); ++k) row += (k ? ", " : "") + std::to_string(launches[k]);
    const auto it = expected.find(name);
    ASSERT_NE(it, expected.end()) << "no expected row; measured " << row << "}},";
    EXPECT_EQ(launches, it->second) << "measured " << row << "}},";
  }
}

// docs/design.md s.8: on the microbench's adaptive layout (64 tokens, the host holding the reversed
// split), vLLM's host numpy mapping of #47474 wrote 24 of 64 token ids wrong and its old indexer
// chain none. So do (b) and (c) here; (d) and fused-suite are exact.
TEST(SuiteStaleBoundaries, AdaptiveLayoutOfDesignSection8) {
  const std::vector<int32_t> lens = {6, 1, 6, 2, 6, 3, 1, 6, 4, 2, 6, 5, 1, 6, 4, 5};
  CaseBatch b;
  b.name = "design_s8_adaptive";
  b.sizes.num_reqs = 16;
  b.sizes.num_tokens = 66;
  b.sizes.num_decodes = 16;
  b.sizes.num_decode_tokens = 66;
  b.sizes.capacity = 128;
  b.sizes.bt_width = 8;
  b.sizes.bt_stride = 8;
  b.qsl.assign(1, 0);
  b.host_qsl.assign(1, 0);
  for (int32_t r = 0; r < 16; ++r) {
    b.qsl.push_back(b.qsl.back() + lens[r]);
    b.host_qsl.push_back(b.host_qsl.back() + lens[15 - r]);
    b.seq_lens.push_back(200 + lens[r]);
    for (int32_t j = 0; j < 8; ++j) b.block_table.push_back(r * 8 + j + 1);
  }
  b.host_seq_lens = b.seq_lens;
  for (int32_t t = 0; t < 66; ++t) b.slot_mapping.push_back(t < 64 ? 1000 + t : -1);
  ASSERT_EQ(b.qsl.back(), 64);
  ASSERT_EQ(b.host_qsl.back(), 64);
  CpuSuite suite;
  for (Impl impl : AllImpls()) {
    const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
    ASSERT_TRUE(r.ok()) << r.status();
    int64_t wrong_ids = 0;
    for (const FieldMismatch& m : r->mismatches) {
      EXPECT_NE(m.kind, MismatchKind::kBug) << ImplName(impl) << "\n" << DescribeMismatches(r->mismatches);
      if (m.field == "token_to_req") wrong_ids = m.count;
      if (m.builder == "indexer_r1" || m.builder == "indexer_r2")
        EXPECT_EQ(m.kind, MismatchKind::kPaddingResidue) << ImplName(impl) << ": the indexer reads device lengths";
    }
    EXPECT_EQ(wrong_ids, ReadsHostBoundaries(impl) ? 24 : 0) << ImplName(impl);
    EXPECT_EQ(HasKind(r->mismatches, MismatchKind::kStaleHost), ReadsHostBoundaries(impl)) << ImplName(impl);
  }
}

}  // namespace
}  // namespace dspark
