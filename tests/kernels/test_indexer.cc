// CPU emulation of the indexer decode metadata: the fused kernel (kernels/indexer_decode.cuh,
// kernels/indexer_impls.h) and state (c)'s chain (kernels/suite/vllm_indexer_ops.h), against the
// reference.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "kernels/common/backend.h"
#include "kernels/indexer_decode.cuh"
#include "kernels/indexer_impls.h"
#include "kernels/reference/indexer_decode.h"
#include "kernels/suite/vllm_ops.h"
#include "tests/kernels/metadata_cases.h"

namespace dspark {
namespace {

// Scratch for the chains' temporaries; the default 64 MiB arena costs more to page in than
// the tests take.
constexpr size_t kTestScratchBytes = size_t{8} << 20;

using testing_util::IndexerCase;
using testing_util::IndexerDiff;
using testing_util::IndexerImages;
using testing_util::kPoison;

enum class IdxImpl { kChain, kFused };

// Runs one implementation over `images` (host memory stands in for device memory).
absl::Status RunIndexer(IdxImpl impl, const IndexerCase& c, IndexerImages& images, OpCounters* counters = nullptr) {
  std::vector<int32_t> arange(c.capacity);
  std::iota(arange.begin(), arange.end(), 0);
  IndexerArgs a;
  a.query_start_loc = c.qsl.data();
  a.seq_lens = c.seq_lens.data();
  a.block_table = c.block_table.data();
  a.host_query_start_loc = c.host_qsl.data();
  a.arange = arange.data();
  a.num_decodes = c.num_decodes;
  a.num_decode_tokens = c.num_decode_tokens;
  a.capacity = c.capacity;
  a.bt_width = c.bt_width;
  a.bt_stride = c.bt_stride;
  a.out_stride = c.out_stride;
  a.seq_out = images.seq_out.data();
  a.bt_out = images.bt_out.data();
  a.decode_lens = images.decode_lens.data();
  a.indices = images.indices.data();
  a.per_req = images.per_req.data();
  CpuBackend be(kTestScratchBytes);
  const absl::Status s = impl == IdxImpl::kChain ? vllm_ops::IndexerDecodeChain(be, a) : IndexerFused(be, a);
  if (counters) *counters = be.counters();
  return s;
}

// ------------------------------------------------------------------ the PR's seed matrix

class IndexerSeed : public ::testing::TestWithParam<IndexerCase> {};

// The kernel alone, driven like the PR's test: grid from the same formula, every field exact,
// and every cell outside the defined ranges still holds the -99 poison.
TEST_P(IndexerSeed, FusedKernelMatchesReferenceExactly) {
  const IndexerCase& c = GetParam();
  IndexerImages got = IndexerImages::Filled(c, kPoison);
  const IndexerDecodeParams p{c.qsl.data(),        c.seq_lens.data(),       c.block_table.data(),
                              got.seq_out.data(),  got.bt_out.data(),       got.decode_lens.data(),
                              got.indices.data(),  got.per_req.data(),      c.num_decodes,
                              c.num_decode_tokens, c.capacity,              c.bt_width,
                              c.bt_stride,         c.out_stride};
  ASSERT_TRUE(CanImplementIndexerDecode(p).ok());
  const int32_t tokens = c.num_decode_tokens;
  EXPECT_EQ(IndexerDecodeKernel::Shape(p).grid,
            std::max(c.num_decodes, tokens + (c.capacity - tokens + 255) / 256));
  EmulateIndexerDecode(p);
  EXPECT_EQ(got, testing_util::ExpectedFusedImage(c, IndexerImages::Filled(c, kPoison)));

  // The seed test's own assertions, spelled out.
  const int32_t n = c.actual();
  std::vector<int32_t> expected_seq, expected_req;
  for (int32_t r = 0; r < c.num_decodes; ++r)
    for (int32_t k = 0; k < c.lens[r]; ++k) {
      expected_seq.push_back(4097 + k);
      expected_req.push_back(r);
    }
  EXPECT_EQ(std::vector<int32_t>(got.seq_out.begin(), got.seq_out.begin() + n), expected_seq);
  for (int32_t t = n; t < c.capacity; ++t) EXPECT_EQ(got.seq_out[t], 0) << "t=" << t;
  for (int32_t t = 0; t < n; ++t)
    for (int32_t col = 0; col < 65; ++col)
      ASSERT_EQ(got.bt_out[t * 69 + col], expected_req[t] * 74 + col) << "t=" << t << " col=" << col;
  for (int32_t t = n; t < tokens; ++t)
    for (int32_t col = 0; col < 65; ++col) ASSERT_EQ(got.bt_out[t * 69 + col], 0);
  EXPECT_EQ(std::vector<int32_t>(got.indices.begin(), got.indices.begin() + n), expected_req);
  for (int32_t t = n; t < tokens; ++t) EXPECT_EQ(got.indices[t], c.num_decodes + (t - n));
  for (int32_t t = 0; t < tokens; ++t) EXPECT_EQ(got.decode_lens[t], 1);
  EXPECT_EQ(std::vector<int32_t>(got.per_req.begin(), got.per_req.begin() + c.num_decodes), c.lens);
}

TEST_P(IndexerSeed, FusedImplMatchesKernelImage) {
  const IndexerCase& c = GetParam();
  IndexerImages got = IndexerImages::Filled(c, kPoison);
  OpCounters k;
  ASSERT_TRUE(RunIndexer(IdxImpl::kFused, c, got, &k).ok());
  EXPECT_EQ(got, testing_util::ExpectedFusedImage(c, IndexerImages::Filled(c, kPoison)));
  EXPECT_EQ(k.kernels, 1);
  EXPECT_EQ(k.Launches(), 1);
  EXPECT_EQ(k.host_array_ops, 0);
}

// The chain is right on every real token; on padding rows it clears only column 0, so the
// poison survives in columns 1..64. That residue is the ONLY difference from the reference.
TEST_P(IndexerSeed, ChainMatchesReferenceExceptPaddingResidue) {
  const IndexerCase& c = GetParam();
  const IndexerImages before = IndexerImages::Filled(c, kPoison);
  IndexerImages got = before;
  ASSERT_TRUE(RunIndexer(IdxImpl::kChain, c, got).ok());
  EXPECT_EQ(got, testing_util::ExpectedChainImage(c, before));
  const IndexerDiff d = testing_util::DiffAgainstReference(c, got);
  EXPECT_EQ(d.StaleFields(), 0);
  EXPECT_EQ(d.bt_pad_col0, 0);
  EXPECT_EQ(d.decode_lens + d.per_req, 0);
  const int64_t padding_rows = c.num_decode_tokens - c.actual();
  EXPECT_EQ(d.bt_pad_rest, padding_rows * (c.bt_width - 1));
}

INSTANTIATE_TEST_SUITE_P(Seeds, IndexerSeed, ::testing::ValuesIn(testing_util::IndexerSeedCases()),
                         [](const auto& info) { return info.param.name; });

// ------------------------------------------------------------------ randomized, fixed seed

TEST(IndexerRandom, FusedExactAndChainExactlyAsModelled) {
  int with_residue = 0;
  for (const auto& c : testing_util::IndexerRandomCases(/*seed=*/20260912, /*count=*/150)) {
    const IndexerImages before = IndexerImages::Garbage(c, 99);
    IndexerImages fused = before, chain = before;
    ASSERT_TRUE(RunIndexer(IdxImpl::kFused, c, fused).ok()) << c.name;
    ASSERT_TRUE(RunIndexer(IdxImpl::kChain, c, chain).ok()) << c.name;
    EXPECT_EQ(fused, testing_util::ExpectedFusedImage(c, before)) << c.name;
    EXPECT_EQ(testing_util::DiffAgainstReference(c, fused).Total(), 0) << c.name;
    EXPECT_EQ(chain, testing_util::ExpectedChainImage(c, before)) << c.name;
    const IndexerDiff d = testing_util::DiffAgainstReference(c, chain);
    EXPECT_EQ(d.Total(), d.bt_pad_rest) << c.name << ": only padding residue may differ";
    with_residue += d.bt_pad_rest > 0;
  }
  EXPECT_GT(with_residue, 10) << "the random cases should exercise padding rows";
}

// ------------------------------------------------------------------ stale host boundaries

std::vector<IndexerCase> StaleCases() {
  std::vector<IndexerCase> out;
  for (const auto& c : testing_util::IndexerSeedCases())
    if (testing_util::Reversed(c.lens) != c.lens) out.push_back(testing_util::WithStaleHost(c, testing_util::Reversed(c.lens)));
  for (const auto& c : testing_util::IndexerRandomCases(/*seed=*/4242, /*count=*/40))
    if (testing_util::Reversed(c.lens) != c.lens && c.num_decodes < 100)
      out.push_back(testing_util::WithStaleHost(c, testing_util::Reversed(c.lens)));
  return out;
}

// vLLM's own test_varlen_indexer_indices_use_device_lengths: under a stale host split with the
// right total, (c)'s chain takes the per-request lengths from the device, so indices, seq_out and
// the valid block-table rows are right; only padding rows may keep old columns.
TEST(IndexerStaleHost, ChainUsesDeviceLengthsAsVllmTests) {
  const auto cases = StaleCases();
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) {
    ASSERT_EQ(c.qsl.back(), c.host_qsl.back()) << "the host keeps the right total";
    ASSERT_NE(c.qsl, c.host_qsl) << "the host split is stale";
    const IndexerImages before = IndexerImages::Filled(c, kPoison);
    IndexerImages fused = before, chain = before;
    ASSERT_TRUE(RunIndexer(IdxImpl::kFused, c, fused).ok());
    ASSERT_TRUE(RunIndexer(IdxImpl::kChain, c, chain).ok());
    EXPECT_EQ(fused, testing_util::ExpectedFusedImage(c, before)) << c.name;
    const IndexerDiff d = testing_util::DiffAgainstReference(c, chain);
    EXPECT_EQ(d.StaleFields(), 0) << c.name << ": the chain maps tokens by the device lengths";
    EXPECT_EQ(d.Total(), d.bt_pad_rest) << c.name;
    EXPECT_EQ(chain, testing_util::ExpectedChainImage(c, before)) << c.name;
  }
}

// ------------------------------------------------------------------ padding residue

TEST(IndexerPaddingResidue, ChainKeepsOldColumnsFusedClearsWholeRows) {
  const IndexerCase c = testing_util::MakeIndexerSeedCase({0, 2, 6, 0, 4}, 17);
  const IndexerImages before = IndexerImages::Garbage(c, 5);
  IndexerImages chain = before, fused = before;
  ASSERT_TRUE(RunIndexer(IdxImpl::kChain, c, chain).ok());
  ASSERT_TRUE(RunIndexer(IdxImpl::kFused, c, fused).ok());
  const int32_t actual = c.actual();
  ASSERT_LT(actual, c.num_decode_tokens);
  for (int32_t t = actual; t < c.num_decode_tokens; ++t) {
    const size_t row = static_cast<size_t>(t) * c.out_stride;
    EXPECT_EQ(chain.bt_out[row], 0) << "t=" << t;
    for (int32_t col = 1; col < c.bt_width; ++col) {
      ASSERT_EQ(chain.bt_out[row + col], before.bt_out[row + col]) << "chain residue at t=" << t << " col=" << col;
      ASSERT_NE(chain.bt_out[row + col], 0);
      ASSERT_EQ(fused.bt_out[row + col], 0) << "fused clears t=" << t << " col=" << col;
    }
  }
  const IndexerDiff d = testing_util::DiffAgainstReference(c, chain);
  EXPECT_EQ(d.bt_pad_rest, int64_t{c.num_decode_tokens - actual} * (c.bt_width - 1));
  EXPECT_EQ(d.Total(), d.bt_pad_rest);
  EXPECT_EQ(testing_util::DiffAgainstReference(c, fused).Total(), 0);
}

// A second run with fewer real tokens on the same buffers (as a graph replay after the device
// rewrote qsl): the fused kernel clears everything the first run left behind.
TEST(IndexerReuse, FusedClearsStalePaddingFromAnEarlierRun) {
  IndexerCase first = testing_util::MakeIndexerSeedCase({6, 6, 6, 6}, 0);  // N_d = 24, all real
  IndexerImages images = IndexerImages::Filled(first, kPoison);
  ASSERT_TRUE(RunIndexer(IdxImpl::kFused, first, images).ok());
  const IndexerImages after_first = images;
  IndexerCase second = first;
  second.lens = {1, 0, 2, 1};  // 4 real tokens, 20 padding rows in the same N_d = 24
  second.qsl = testing_util::QslFromLens(second.lens);
  second.host_qsl = second.qsl;
  ASSERT_TRUE(RunIndexer(IdxImpl::kFused, second, images).ok());
  EXPECT_EQ(images, testing_util::ExpectedFusedImage(second, after_first));
  EXPECT_EQ(testing_util::DiffAgainstReference(second, images).Total(), 0);
}

// ------------------------------------------------------------------ launch counts

struct ChainCountCase {
  std::vector<int32_t> lens;
  int32_t padding;
  int64_t kernels, h2d, d2d, fills;
};

// State (c)'s chain, as docs/states.md s.2.5 counts it: 26 launches at batch-16 decode (one
// repeat_interleave of a tensor is 4 kernels + its index_select), + 3 with graph padding.
TEST(IndexerLaunches, ChainCountsPerCase) {
  const ChainCountCase cases[] = {
      // kernels: diff; 3 x repeat_interleave (cast, scan tile init, scan, compute) + index_select;
      // seq - lens - qsl (2); + arange, + 1 (2); the block-table rows' strided copy; padding adds
      // the fake ids (nd + arange) and the column-0 fill. Copies: per_req, indices, seq_out, and
      // the fake ids. Fills: seq_out's tail, decode_lens.
      {{0, 2, 6, 0, 4}, 17, 23, 0, 4, 2},
      {{0, 2, 6, 0, 4}, 0, 21, 0, 3, 2},
      {std::vector<int32_t>(16, 1), 0, 21, 0, 3, 2},  // batch-16 decode: 26 launches
      {{0, 0, 0}, 0, 3, 0, 1, 1},                     // nothing real: diff, subs, per_req copy, seq fill
      {{0, 0, 0}, 17, 5, 0, 2, 2},                    // ... plus fake ids, col-0 fill, decode_lens fill
  };
  for (const auto& cc : cases) {
    const IndexerCase c = testing_util::MakeIndexerSeedCase(cc.lens, cc.padding);
    IndexerImages got = IndexerImages::Filled(c, kPoison);
    OpCounters k;
    ASSERT_TRUE(RunIndexer(IdxImpl::kChain, c, got, &k).ok());
    EXPECT_EQ(k.kernels, cc.kernels) << c.name;
    EXPECT_EQ(k.h2d_copies, cc.h2d) << c.name;
    EXPECT_EQ(k.d2d_copies, cc.d2d) << c.name;
    EXPECT_EQ(k.fills, cc.fills) << c.name;
    EXPECT_EQ(k.host_syncs, 0) << c.name;
    EXPECT_EQ(k.host_array_ops, 1) << c.name << ": decode_lens_cpu (diff, sum)";
  }
}

// ------------------------------------------------------------------ argument checks

TEST(IndexerValidation, RejectsBadArguments) {
  IndexerCase c = testing_util::MakeIndexerSeedCase({0, 2, 6, 0, 4}, 17);
  IndexerImages got = IndexerImages::Filled(c, kPoison);
  const IndexerImages untouched = got;

  IndexerCase small = c;
  small.capacity = c.num_decode_tokens - 1;
  EXPECT_EQ(RunIndexer(IdxImpl::kFused, small, got).code(), absl::StatusCode::kOutOfRange);

  IndexerCase wide = c;
  wide.bt_width = c.out_stride + 1;
  EXPECT_EQ(RunIndexer(IdxImpl::kFused, wide, got).code(), absl::StatusCode::kInvalidArgument);

  IndexerCase over = c;
  over.host_lens = {0, 2, 6, 0, 4 + 18};  // host total past N_d
  over.host_qsl = testing_util::QslFromLens(over.host_lens);
  const absl::Status s = RunIndexer(IdxImpl::kChain, over, got);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("num_decode_tokens"), std::string::npos) << s;

  IndexerCase bad_host = c;
  bad_host.host_qsl = {0, 3, 2, 8, 8, 12};
  EXPECT_EQ(RunIndexer(IdxImpl::kChain, bad_host, got).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(got == untouched) << "a rejected call writes nothing";
}

}  // namespace
}  // namespace dspark
