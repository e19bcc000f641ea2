// vLLM 0.33.0+'s recorded metadata graphs (kernels/suite/metadata_graph.h): which steps replay a
// recording, vLLM's key, the capture batch's host view, and that a host value frozen by a
// recording is caught by the check (a single changed cell).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/suite/cases.h"
#include "kernels/suite/graph_key.h"
#include "kernels/suite/metadata_graph.h"
#include "kernels/suite/suite.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;

TEST(VllmMetadataKey, OnlyFullUniformDecodeTargetStepsWithoutAdaptiveVerification) {
  CaseOptions o;
  o.seed = 4;
  for (SeedCase c : kAllSeedCases) {
    const CaseBatch b = MustMake(c, o);
    const std::optional<VllmMetadataGraphKey> key = VllmMetadataKey(b.Inputs());
    SCOPED_TRACE(b.name);
    // decode and verify (every request verifies K drafts: equal host lengths): FULL, uniform;
    // adaptive_verify: max_query_len set; draft cases: the speculator's build; prefills: not FULL.
    const bool uniform = c == SeedCase::kDecode || c == SeedCase::kVerify;
    EXPECT_EQ(key.has_value(), uniform);
    EXPECT_EQ(ReplaysRecordedGraph(Impl::kVllm034, b.Inputs()), uniform);
    EXPECT_FALSE(ReplaysRecordedGraph(Impl::kFused, b.Inputs())) << "vllm-0.31 builds eagerly";
    // The what-if records adaptive verification steps too.
    EXPECT_EQ(VllmMetadataKey(b.Inputs(), /*record_adaptive=*/true).has_value(),
              uniform || c == SeedCase::kAdaptiveVerify);
  }
  const CaseBatch d = MustMake(SeedCase::kDecode, o);
  EXPECT_EQ(VllmMetadataKey(d.Inputs())->ToString(), "(16, 16, 16, 16)");
  // A verification whose host lengths differ is not uniform: built eagerly.
  CaseBatch v = MustMake(SeedCase::kVerify, o);
  ASSERT_GE(v.host_qsl[2] - v.host_qsl[1], 2);
  --v.host_qsl[1];
  --v.qsl[1];
  EXPECT_FALSE(VllmMetadataKey(v.Inputs()).has_value());
  CaseOptions padded = o;
  padded.batch = 13;  // 13 tokens padded to the capture size 16, requests padded alike
  padded.padding_reqs = 3;
  const CaseBatch p = MustMake(SeedCase::kDecode, padded);
  ASSERT_EQ(p.sizes.num_tokens, 16);
  EXPECT_EQ(VllmMetadataKey(p.Inputs())->ToString(), "(13, 16, 13, 16)");
  // vllm-0.34's executor graph key is vLLM's: nothing but the sizes, flags and the key's values.
  EXPECT_EQ(MakeGraphKey(Impl::kVllm034, p.Inputs()).ToString().find("vllm_key=(13, 16, 13, 16)") !=
                std::string::npos,
            true)
      << MakeGraphKey(Impl::kVllm034, p.Inputs()).ToString();
}

TEST(VllmMetadataKey, CaptureBatchSpreadsTheTokensEvenly) {
  const RecordedHostView v = CaptureDummyHostView(VllmMetadataGraphKey{4, 5, 7, 8}, 1000);
  EXPECT_EQ(v.query_start_loc, (std::vector<int32_t>{0, 2, 4, 6, 7, 7}));
  EXPECT_EQ(v.seq_lens, (std::vector<int32_t>(5, 1000)));
}

// An adaptive verification step of 4 decode requests whose device split is `lens`, the host
// holding vLLM's placeholder (compact_batch: B // nv each, one more to the first B % nv).
CaseBatch AdaptiveStep(const std::vector<int32_t>& lens) {
  CaseBatch b;
  b.name = "adaptive_frozen";
  b.seed_case = SeedCase::kAdaptiveVerify;
  b.full_graph = true;
  b.adaptive = true;
  const int32_t R = static_cast<int32_t>(lens.size());
  int32_t total = 0;
  for (int32_t l : lens) total += l;
  b.sizes = BatchSizes{R, total, R, total, 64, 3, 3};
  b.qsl.assign(1, 0);
  for (int32_t r = 0; r < R; ++r) {
    b.qsl.push_back(b.qsl.back() + lens[r]);
    b.seq_lens.push_back(100 + 10 * r + lens[r]);
    for (int32_t j = 0; j < 3; ++j) b.block_table.push_back(10 * r + j + 1);
  }
  const int32_t base = total / R, extra = total % R;
  b.host_qsl.assign(1, 0);
  for (int32_t r = 0; r < R; ++r) b.host_qsl.push_back(b.host_qsl.back() + base + (r < extra));
  b.host_seq_lens = b.seq_lens;
  for (int32_t r = 0; r < R; ++r)
    for (int32_t t = b.qsl[r]; t < b.qsl[r + 1]; ++t) {
      const int32_t pos = b.seq_lens[r] - lens[r] + (t - b.qsl[r]);
      b.slot_mapping.push_back(int64_t{b.block_table[3 * r + pos / 64]} * 64 + pos % 64);
    }
  return b;
}

// The what-if: this step replayed from a recording made on vLLM's capture batch. The recording's
// host split ({2, 1, 1, 1}) differs from the device's ({1, 2, 1, 1}) in one token's request: a
// build that maps tokens on the host (#47474) writes exactly that one cell wrong, and the check
// names it; (d) / (e) read only the host total, which the key fixes, and stay exact.
TEST(RecordedGraphFreeze, ASingleFrozenCellIsCaught) {
  const CaseBatch b = AdaptiveStep({1, 2, 1, 1});
  const std::optional<VllmMetadataGraphKey> key = VllmMetadataKey(b.Inputs(), /*record_adaptive=*/true);
  ASSERT_TRUE(key.has_value());
  EXPECT_FALSE(VllmMetadataKey(b.Inputs()).has_value()) << "vLLM builds adaptive steps eagerly";
  const RecordedHostView rec = CaptureDummyHostView(*key, 4096);
  ASSERT_EQ(rec.query_start_loc, (std::vector<int32_t>{0, 2, 3, 4, 5}));
  BatchInputs frozen = b.Inputs();
  frozen.host = HostBatch{rec.query_start_loc.data(), rec.seq_lens.data()};
  CpuSuite suite;
  const absl::StatusOr<SuiteRunResult> cached = suite.Run(Impl::kCached, frozen);
  ASSERT_TRUE(cached.ok()) << cached.status();
  bool found = false;
  for (const FieldMismatch& m : cached->mismatches)
    if (m.field == "token_to_req") {
      found = true;
      EXPECT_EQ(m.count, 1);
      EXPECT_EQ(m.index, 1);
      EXPECT_EQ(m.expected, 1);
      EXPECT_EQ(m.actual, 0);
    }
  EXPECT_TRUE(found) << DescribeMismatches(cached->mismatches);
  for (Impl impl : {Impl::kFused, Impl::kVllm034, Impl::kFusedSuite}) {
    const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, frozen);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->mismatches.empty()) << ImplName(impl) << "\n" << DescribeMismatches(r->mismatches);
  }
}

// The indexer's host values: 0.28.0-0.33.0 take decode_lens_cpu max / min from the host split
// (stale under adaptive verification); 0.34.0 takes next_n and "not uniform" there.
TEST(RecordedGraphFreeze, IndexerHostValuesByRelease) {
  const CaseBatch b = AdaptiveStep({1, 3, 1, 3});  // the placeholder: {2, 2, 2, 2}
  const BatchInputs in = b.Inputs();
  const IndexerHostFields device = IndexerDeviceFields(in);
  EXPECT_EQ(device.write_max_decode_len, 3);
  EXPECT_FALSE(device.decode_is_uniform);
  const std::optional<IndexerHostFields> d = IndexerHostFieldsOf(Impl::kFused, in, 5);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->write_max_decode_len, 2);
  EXPECT_TRUE(d->decode_is_uniform);
  EXPECT_FALSE(IndexerHostFieldsSafe(*d, in)) << "a stale 'uniform' of width 2 for a device split up to 3";
  const std::optional<IndexerHostFields> e = IndexerHostFieldsOf(Impl::kVllm034, in, 5);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->write_max_decode_len, 6);
  EXPECT_FALSE(e->decode_is_uniform);
  EXPECT_TRUE(IndexerHostFieldsSafe(*e, in));
  EXPECT_FALSE(IndexerHostFieldsOf(Impl::kFusedSuite, in, 5).has_value());
}

}  // namespace
}  // namespace dspark
