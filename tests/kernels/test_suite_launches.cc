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
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
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
  //   (a) four builder mappings (SWA, MLA r1, MLA r2, ring; 1 copy each, and SWA's int64 map
  //       narrowed on the device, 1 kernel) -> 74.
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
  EXPECT_EQ(counts[Impl::kChain].Launches(), 74);
  EXPECT_EQ(counts[Impl::kChain].h2d_copies, 4);
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
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
      // prefill steps add 5 ops per indexer prefill chunk (chunked prefill: long contexts make
      // several chunks), and (c) #57207's host-planned segmentation (10 ops), which no release
      // of the other states has (ModelConsts::what_if_57207 adds it to them).
      {"prefill", {26, 22, 39, 21, 21, 1, 0}},
      {"chunked_prefill", {101, 97, 114, 96, 96, 1, 0}},
      {"mixed", {87, 83, 100, 30, 30, 1, 0}},
      {"decode", {74, 70, 77, 17, 18, 1, 1}},
      {"verify", {73, 69, 76, 17, 18, 1, 1}},
      {"adaptive_verify", {80, 76, 83, 17, 17, 1, 0}},
      {"draft", {80, 76, 83, 17, 17, 1, 0}},
      {"adaptive_draft", {80, 76, 83, 17, 17, 1, 0}},
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

// DeepSeek-V4 (docs/states.md s.9): the launch count of every V4 state in every seed case (batch
// 16, seed 4, the cases `verify --model v4` reports), exact against the references. Columns:
// vllm-0.24 (a). At decode: SWA 6 (its own int64 host mapping [h2d] and the device's narrowing
// copy_ [k], the mask 2, the tail fill, the kernel), MLA C4A 5 (req_id_per_token fill_(0) over the buffer, [h2d], the out-of-place
// clamp(min=0), fill_(-1), the kernel), MLA C128A 6 (the same and the C128A kernel), three
// compressors 3 each (the int64 mapping [h2d] + [k], clamp_), the ratio-4 indexer's native path 11 (compressed slots 2,
// seq_lens // 4 1, diff 1, seq - L, + 1, + offsets and the assignment 4, `seq_lens //= 4` 1,
// DeepGEMM's scheduler 2): 37, as vLLM 0.24.0 issues them on the H200 (torch.profiler).
// vllm-0.27 (b). At decode: six token maps through CommonAttentionMetadata.token_to_req_indices,
// one per KV-cache group ([h2d] each, + a zero_ of the tail when padded), SWA 4, MLA C4A 3 (clamp_,
// fill_, kernel), MLA C128A 4, three compressors 1 each, the indexer 11: 31. Its draft cases are
// padded (six zero_ more) where (a)'s builders zero nothing.
// vllm-0.29. At decode, 0.29.0's builders on V4's KV-cache groups: six groups map tokens with
// the device chain (6 x 8), SWA 4, MLA C4A 3 (clamp_, fill_, kernel), MLA C128A 4 (the same and
// the C128A kernel), three compressors 1 each (clamp_), the ratio-4 indexer 31 (compressed slots
// 2, seq_lens // 4 1, the varlen chain without the per_req copy 25, `seq_lens //= 4` 1, DeepGEMM's
// scheduler 2): 93. Padded steps add a zero_ per mapping (6) and the indexer's 3 padding ops.
TEST(SuiteLaunchCounts, EveryCaseDeepSeekV4) {
  const std::map<std::string, std::vector<int64_t>> expected = {
      // vllm-0.24, vllm-0.27, vllm-0.29 (ImplsOfModel order)
      {"prefill", {34, 28, 70}},         {"chunked_prefill", {49, 43, 85}}, {"mixed", {44, 44, 106}},
      {"decode", {37, 31, 93}},          {"verify", {37, 31, 93}},          {"adaptive_verify", {42, 42, 102}},
      {"draft", {37, 37, 102}},          {"adaptive_draft", {37, 37, 102}},
  };
  const ModelConsts v4 = ModelConstsFor(ModelKind::kV4);
  ASSERT_EQ(ImplsOfModel(ModelKind::kV4).size(), expected.begin()->second.size());
  for (SeedCase c : kAllSeedCases) {
    CaseOptions o;
    o.seed = 4;
    o.consts = v4;
    const CaseBatch b = MustMake(c, o);
    CpuSuite suite(v4);
    std::vector<int64_t> launches;
    for (Impl impl : ImplsOfModel(ModelKind::kV4)) {
      const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
      ASSERT_TRUE(r.ok()) << r.status();
      for (const FieldMismatch& m : r->mismatches)
        EXPECT_NE(m.kind, MismatchKind::kBug) << ImplName(impl) << "\n" << DescribeMismatches(r->mismatches);
      EXPECT_EQ(r->counters.d2h_copies, 0) << ImplName(impl);
      EXPECT_EQ(r->counters.host_syncs, 0) << ImplName(impl);
      launches.push_back(r->counters.Launches());
    }
    const std::string name(SeedCaseName(c));
    std::string row = "{\"" + name + "\", {";
    for (size_t k = 0; k < launches.size(); ++k) row += (k ? ", " : "") + std::to_string(launches[k]);
    const auto it = expected.find(name);
    ASSERT_NE(it, expected.end()) << "no expected row; measured " << row << "}},";
    EXPECT_EQ(launches, it->second) << "measured " << row << "}},";
  }
}

// A state runs only on its release's model: a V4.1 suite refuses a V4 state and a V4 suite a
// V4.1 one, naming both models.
TEST(SuiteModels, PairingsNoReleaseShippedAreRefused) {
  CaseOptions o;
  o.seed = 4;
  const CaseBatch v41_case = MustMake(SeedCase::kDecode, o);
  CpuSuite v41;
  for (Impl impl : ImplsOfModel(ModelKind::kV4)) {
    const absl::StatusOr<SuiteRunResult> r = v41.Run(impl, v41_case.Inputs());
    ASSERT_FALSE(r.ok()) << ImplName(impl);
    EXPECT_NE(std::string(r.status().message()).find("DeepSeek-V4.1"), std::string::npos) << r.status();
  }
  o.consts = ModelConstsFor(ModelKind::kV4);
  const CaseBatch v4_case = MustMake(SeedCase::kDecode, o);
  CpuSuite v4(o.consts);
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    const absl::StatusOr<SuiteRunResult> r = v4.Run(impl, v4_case.Inputs());
    ASSERT_FALSE(r.ok()) << ImplName(impl);
    EXPECT_NE(std::string(r.status().message()).find("DeepSeek-V4"), std::string::npos) << r.status();
  }
  EXPECT_FALSE(ParseImplListForModel("vllm-0.29", ModelKind::kV41).ok());
  EXPECT_FALSE(ParseImplListForModel("vllm-56562", ModelKind::kV4).ok());
  const absl::StatusOr<std::vector<Impl>> all_v4 = ParseImplListForModel("all", ModelKind::kV4);
  ASSERT_TRUE(all_v4.ok());
  EXPECT_EQ(*all_v4, ImplsOfModel(ModelKind::kV4));
}

// Randomised DeepSeek-V4 steps (fixed seeds, every case, several batch sizes and case options):
// every V4 state exact against the references, up to the old chain's padding residue.
TEST(SuiteModels, DeepSeekV4RandomisedAgainstReferences) {
  const ModelConsts v4 = ModelConstsFor(ModelKind::kV4);
  CpuSuite suite(v4);
  int64_t checked = 0;
  for (SeedCase c : kAllSeedCases) {
    for (int32_t batch : {1, 3, 16, 65}) {
      for (int32_t s = 0; s < 3; ++s) {
        CaseOptions o;
        o.consts = v4;
        o.batch = batch;
        o.seed = 1000 + static_cast<uint64_t>(s) * 7919 + static_cast<uint64_t>(batch);
        o.padding_reqs = s % 3;
        o.bt_stride_slack = 1 + s % 5;
        o.unstored_token_every = s == 1 ? 7 : 0;
        o.null_first_block_every = s == 2 ? 3 : 0;
        const CaseBatch b = MustMake(c, o);
        for (Impl impl : ImplsOfModel(ModelKind::kV4)) {
          const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, b.Inputs());
          ASSERT_TRUE(r.ok()) << b.name << ": " << r.status();
          for (const FieldMismatch& m : r->mismatches)
            EXPECT_NE(m.kind, MismatchKind::kBug) << ImplName(impl) << " on " << b.name << "\n"
                                                  << DescribeMismatches(r->mismatches);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
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
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
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
