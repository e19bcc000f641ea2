// Indexer decode metadata on the GPU: the fused kernel and the old chain through GpuBackend,
// stale host boundaries, padding residue, and CUDA-graph replay after the device rewrote
// query_start_loc in place.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "kernels/common/backend.h"
#include "kernels/common/backend_gpu.cuh"
#include "kernels/indexer_decode.cuh"
#include "kernels/indexer_impls.h"
#include "kernels/reference/token_map.h"
#include "kernels/token_map_impls.h"
#include "kernels/suite/vllm_ops.h"
#include "sim/exec/gpu_timing.cuh"
#include "tests/common/gpu_test_util.cuh"
#include "tests/kernels/metadata_cases.h"

namespace dspark {
namespace {

using testing_util::IndexerCase;
using testing_util::IndexerDiff;
using testing_util::IndexerImages;
using testing_util::kPoison;

enum class IdxImpl { kChain, kFused };
const char* IdxImplName(IdxImpl i) { return i == IdxImpl::kChain ? "chain" : "fused"; }

// DeviceBuffer uploads are cudaMemcpy from pageable memory, which may return before the DMA
// lands; the tests' work runs on a non-blocking stream that does not order behind it.
void SettleUploads() { CUDA_CHECK(cudaDeviceSynchronize()); }

std::vector<int32_t> Iota(int32_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

IndexerArgs MakeArgs(const IndexerCase& c, const int32_t* qsl, const int32_t* seq, const int32_t* bt,
                     const int32_t* arange, int32_t* seq_out, int32_t* bt_out, int32_t* decode_lens, int32_t* indices,
                     int32_t* per_req) {
  IndexerArgs a;
  a.query_start_loc = qsl;
  a.seq_lens = seq;
  a.block_table = bt;
  a.host_query_start_loc = c.host_qsl.data();
  a.arange = arange;
  a.num_decodes = c.num_decodes;
  a.num_decode_tokens = c.num_decode_tokens;
  a.capacity = c.capacity;
  a.bt_width = c.bt_width;
  a.bt_stride = c.bt_stride;
  a.out_stride = c.out_stride;
  a.seq_out = seq_out;
  a.bt_out = bt_out;
  a.decode_lens = decode_lens;
  a.indices = indices;
  a.per_req = per_req;
  return a;
}

template <class Backend>
absl::Status RunIndexer(IdxImpl impl, Backend& be, const IndexerArgs& a) {
  return impl == IdxImpl::kChain ? vllm_ops::IndexerDecodeChain(be, a) : IndexerFused(be, a);
}

// What the same implementation counts when emulated on the CPU.
OpCounters CpuCounts(IdxImpl impl, const IndexerCase& c) {
  IndexerImages im = IndexerImages::Filled(c, kPoison);
  const std::vector<int32_t> arange = Iota(c.capacity);
  CpuBackend be(size_t{8} << 20);
  const absl::Status s =
      RunIndexer(impl, be,
                 MakeArgs(c, c.qsl.data(), c.seq_lens.data(), c.block_table.data(), arange.data(), im.seq_out.data(),
                          im.bt_out.data(), im.decode_lens.data(), im.indices.data(), im.per_req.data()));
  EXPECT_TRUE(s.ok()) << s;
  return be.counters();
}

// Device copies of one case's inputs and the five persistent output buffers.
struct GpuIndexer {
  DeviceBuffer<int32_t> qsl, seq, bt, arange, seq_out, bt_out, decode_lens, indices, per_req;
  explicit GpuIndexer(const IndexerCase& c)
      : qsl(c.qsl), seq(c.seq_lens), bt(c.block_table), arange(Iota(c.capacity)), seq_out(c.capacity),
        bt_out(static_cast<size_t>(c.capacity) * c.out_stride), decode_lens(c.capacity), indices(c.capacity),
        per_req(c.capacity) {}
  IndexerArgs Args(const IndexerCase& c) const {
    return MakeArgs(c, qsl.get(), seq.get(), bt.get(), arange.get(), seq_out.get(), bt_out.get(), decode_lens.get(),
                    indices.get(), per_req.get());
  }
  void Upload(const IndexerImages& im) {
    seq_out.Upload(im.seq_out);
    bt_out.Upload(im.bt_out);
    decode_lens.Upload(im.decode_lens);
    indices.Upload(im.indices);
    per_req.Upload(im.per_req);
    SettleUploads();
  }
  void RewriteLens(const std::vector<int32_t>& lens) {
    qsl.Upload(testing_util::QslFromLens(lens));
    SettleUploads();
  }
  IndexerImages Download() const {
    return IndexerImages{seq_out.Download(), bt_out.Download(), decode_lens.Download(), indices.Download(),
                         per_req.Download()};
  }
};

// Runs eagerly on the GPU over `before`; checks the GPU counted what the CPU emulation did.
IndexerImages RunOnGpu(IdxImpl impl, const IndexerCase& c, const IndexerImages& before) {
  GpuEnv env;
  GpuBackend be = env.Backend();
  GpuIndexer g(c);
  g.Upload(before);
  const absl::Status s = RunIndexer(impl, be, g.Args(c));
  EXPECT_TRUE(s.ok()) << s;
  env.Sync();
  const OpCounters cpu = CpuCounts(impl, c);
  EXPECT_EQ(be.counters().kernels, cpu.kernels) << c.name;
  EXPECT_EQ(be.counters().h2d_copies, cpu.h2d_copies) << c.name;
  EXPECT_EQ(be.counters().d2d_copies, cpu.d2d_copies) << c.name;
  EXPECT_EQ(be.counters().fills, cpu.fills) << c.name;
  EXPECT_EQ(be.counters().Launches(), cpu.Launches()) << c.name;
  return g.Download();
}

class IndexerGpuSeed : public ::testing::TestWithParam<IndexerCase> {};

TEST_P(IndexerGpuSeed, FusedMatchesReferenceExactly) {
  DS_REQUIRE_GPU();
  const IndexerCase& c = GetParam();
  const IndexerImages before = IndexerImages::Filled(c, kPoison);
  const IndexerImages got = RunOnGpu(IdxImpl::kFused, c, before);
  EXPECT_EQ(got, testing_util::ExpectedFusedImage(c, before));
  EXPECT_EQ(testing_util::DiffAgainstReference(c, got).Total(), 0);
  // The seed test's headline values: causal lengths from 4097, fake ids after the real ones.
  if (c.actual() > 0) EXPECT_EQ(got.seq_out[0], 4097);
  for (int32_t t = c.actual(); t < c.num_decode_tokens; ++t) EXPECT_EQ(got.indices[t], c.num_decodes + t - c.actual());
}

TEST_P(IndexerGpuSeed, ChainMatchesReferenceExceptPaddingResidue) {
  DS_REQUIRE_GPU();
  const IndexerCase& c = GetParam();
  const IndexerImages before = IndexerImages::Filled(c, kPoison);
  const IndexerImages got = RunOnGpu(IdxImpl::kChain, c, before);
  EXPECT_EQ(got, testing_util::ExpectedChainImage(c, before));
  const IndexerDiff d = testing_util::DiffAgainstReference(c, got);
  EXPECT_EQ(d.Total(), d.bt_pad_rest);
  EXPECT_EQ(d.bt_pad_rest, int64_t{c.num_decode_tokens - c.actual()} * (c.bt_width - 1));
}

INSTANTIATE_TEST_SUITE_P(Seeds, IndexerGpuSeed, ::testing::ValuesIn(testing_util::IndexerSeedCases()),
                         [](const auto& info) { return info.param.name; });

// The thin launcher itself, on the legacy stream, as a caller outside the Backend would use it.
TEST(IndexerGpuLauncher, LaunchIndexerDecodeWritesTheSeedCase) {
  DS_REQUIRE_GPU();
  const IndexerCase c = testing_util::MakeIndexerSeedCase({0, 2, 6, 0, 4}, 17);
  const IndexerImages before = IndexerImages::Filled(c, kPoison);
  GpuIndexer g(c);
  g.Upload(before);
  ASSERT_TRUE(CanImplementIndexerDecode(ToIndexerDecodeParams(g.Args(c))).ok());
  CUDA_CHECK(LaunchIndexerDecode(ToIndexerDecodeParams(g.Args(c)), nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(g.Download(), testing_util::ExpectedFusedImage(c, before));
}

TEST(IndexerGpuRandom, FusedExactChainAsModelled) {
  DS_REQUIRE_GPU();
  for (const auto& c : testing_util::IndexerRandomCases(/*seed=*/20260912, /*count=*/60)) {
    const IndexerImages before = IndexerImages::Garbage(c, 7);
    EXPECT_EQ(RunOnGpu(IdxImpl::kFused, c, before), testing_util::ExpectedFusedImage(c, before)) << c.name;
    EXPECT_EQ(RunOnGpu(IdxImpl::kChain, c, before), testing_util::ExpectedChainImage(c, before)) << c.name;
  }
}

// vLLM's test_varlen_indexer_indices_use_device_lengths on the GPU: (c)'s chain follows the
// device lengths under a stale host split with the right total.
TEST(IndexerGpuStaleHost, ChainUsesDeviceLengthsAsVllmTests) {
  DS_REQUIRE_GPU();
  int checked = 0;
  for (const auto& base : testing_util::IndexerSeedCases()) {
    if (testing_util::Reversed(base.lens) == base.lens) continue;
    const IndexerCase c = testing_util::WithStaleHost(base, testing_util::Reversed(base.lens));
    const IndexerImages before = IndexerImages::Filled(c, kPoison);
    EXPECT_EQ(RunOnGpu(IdxImpl::kFused, c, before), testing_util::ExpectedFusedImage(c, before)) << c.name;
    const IndexerImages chain = RunOnGpu(IdxImpl::kChain, c, before);
    const IndexerDiff d = testing_util::DiffAgainstReference(c, chain);
    EXPECT_EQ(d.StaleFields(), 0) << c.name;
    EXPECT_EQ(d.Total(), d.bt_pad_rest) << c.name;
    EXPECT_EQ(chain, testing_util::ExpectedChainImage(c, before)) << c.name;
    ++checked;
  }
  EXPECT_EQ(checked, 2) << "[0,2,6,0,4] x padding {0, 17}";
}

TEST(IndexerGpuPaddingResidue, ChainKeepsOldColumnsFusedClearsWholeRows) {
  DS_REQUIRE_GPU();
  const IndexerCase c = testing_util::MakeIndexerSeedCase({0, 2, 6, 0, 4}, 17);
  const IndexerImages before = IndexerImages::Garbage(c, 5);
  const IndexerImages chain = RunOnGpu(IdxImpl::kChain, c, before);
  const IndexerImages fused = RunOnGpu(IdxImpl::kFused, c, before);
  for (int32_t t = c.actual(); t < c.num_decode_tokens; ++t) {
    const size_t row = static_cast<size_t>(t) * c.out_stride;
    EXPECT_EQ(chain.bt_out[row], 0);
    for (int32_t col = 1; col < c.bt_width; ++col) {
      ASSERT_EQ(chain.bt_out[row + col], before.bt_out[row + col]) << "t=" << t << " col=" << col;
      ASSERT_EQ(fused.bt_out[row + col], 0) << "t=" << t << " col=" << col;
    }
  }
  const IndexerDiff d = testing_util::DiffAgainstReference(c, chain);
  EXPECT_EQ(d.Total(), d.bt_pad_rest);
  EXPECT_GT(d.bt_pad_rest, 0);
}

// ------------------------------------------------------------------ CUDA-graph replay

// Captures `impl` on a non-default stream with the boundaries of `c`, then for each entry of
// `rewrites` writes those device lengths into qsl in place, poisons the outputs, replays and
// downloads. The host copy of the boundaries is never touched (it stays at c's split).
std::vector<IndexerImages> CaptureAndReplay(IdxImpl impl, const IndexerCase& c,
                                            const std::vector<std::vector<int32_t>>& rewrites,
                                            const IndexerImages& before) {
  GpuEnv env;
  GpuBackend be = env.Backend();
  GpuIndexer g(c);
  WarmUpBeforeCapture(env, be, [&] { return RunIndexer(impl, be, g.Args(c)); });
  g.Upload(before);
  CudaGraph graph;
  graph.BeginCapture(env.stream.get());
  const absl::Status s = RunIndexer(impl, be, g.Args(c));
  graph.EndCapture(env.stream.get());
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(static_cast<int64_t>(graph.NodeCount()), CpuCounts(impl, c).Launches())
      << IdxImplName(impl) << ": graph nodes vs launches counted by the CPU emulation";
  std::vector<IndexerImages> out;
  for (const auto& lens : rewrites) {
    g.RewriteLens(lens);
    g.Upload(before);
    graph.Replay(env.stream.get());
    env.Sync();
    out.push_back(g.Download());
  }
  return out;
}

TEST(IndexerGpuGraph, FusedFollowsDeviceBoundariesAfterReplay) {
  DS_REQUIRE_GPU();
  for (const auto& c : testing_util::IndexerSeedCases()) {
    const IndexerImages before = IndexerImages::Filled(c, kPoison);
    const auto reversed = testing_util::Reversed(c.lens);
    const auto images = CaptureAndReplay(IdxImpl::kFused, c, {c.lens, reversed}, before);
    ASSERT_EQ(images.size(), 2u);
    EXPECT_EQ(images[0], testing_util::ExpectedFusedImage(c, before)) << c.name;
    EXPECT_EQ(images[1], testing_util::ExpectedFusedImage(testing_util::WithStaleHost(c, reversed), before))
        << c.name << ": replay after the in-place rewrite";
  }
}

// The pair of #56562 as one serial graph whose indexer is a programmatic dependent launch
// (GpuBackend::OverlapNextLaunch; microbench's "fused+fused (PDL)" row): it may start while the
// token map runs, and must still write exactly what it writes alone, and must not complete
// before the map does. A device-to-device copy of the map after the indexer, ordered only after
// the indexer, must therefore see the finished map. Replayed after in-place rewrites of qsl.
TEST(IndexerGpuGraph, DependentLaunchAfterTheTokenMapWritesTheSameBuffers) {
  DS_REQUIRE_GPU();
  int checked = 0;
  for (const auto& c : testing_util::IndexerSeedCases()) {
    if (c.num_decodes == 0) continue;
    const IndexerImages before = IndexerImages::Filled(c, kPoison);
    GpuEnv env;
    GpuBackend be = env.Backend();
    GpuIndexer g(c);
    DeviceBuffer<int32_t> map(c.capacity), map_copy(c.capacity);
    TokenMapArgs m;
    m.query_start_loc = g.qsl.get();
    m.host_query_start_loc = c.host_qsl.data();
    m.num_reqs = c.num_decodes;
    m.num_tokens = c.num_decode_tokens;
    m.out = map.get();
    m.buffer_len = c.capacity;
    auto issue = [&]() -> absl::Status {
      DS_RETURN_IF_ERROR(TokenMapFused(be, m).status());
      be.OverlapNextLaunch();
      DS_RETURN_IF_ERROR(IndexerFused(be, g.Args(c)));
      be.CopyDeviceToDevice(map_copy.get(), map.get(), sizeof(int32_t) * static_cast<size_t>(c.num_decode_tokens));
      return be.status();
    };
    WarmUpBeforeCapture(env, be, issue);
    CudaGraph graph;
    graph.BeginCapture(env.stream.get());
    const absl::Status s = issue();
    graph.EndCapture(env.stream.get());
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(graph.NodeCount(), 3u) << c.name;
    for (const auto& lens : {c.lens, testing_util::Reversed(c.lens)}) {
      const IndexerCase now = testing_util::WithStaleHost(c, lens);
      g.RewriteLens(lens);
      g.Upload(before);
      map.Upload(std::vector<int32_t>(c.capacity, kPoison));
      map_copy.Upload(std::vector<int32_t>(c.capacity, kPoison));
      SettleUploads();
      graph.Replay(env.stream.get());
      env.Sync();
      EXPECT_EQ(g.Download(), testing_util::ExpectedFusedImage(now, before)) << c.name;
      const std::vector<int32_t> want = ref::TokenToReq(now.qsl.data(), c.num_decodes, c.num_decode_tokens);
      std::vector<int32_t> got = map.Download(), copied = map_copy.Download();
      got.resize(want.size());
      copied.resize(want.size());
      EXPECT_EQ(got, want) << c.name;
      EXPECT_EQ(copied, want) << c.name << ": the copy ordered after the dependent indexer saw the finished map";
      ++checked;
    }
  }
  EXPECT_GE(checked, 6);
}

// The device may also shrink the real token count under the same capture (fewer accepted
// drafts): the replay clears every row that became padding, in all columns.
TEST(IndexerGpuGraph, FusedClearsRowsThatBecamePadding) {
  DS_REQUIRE_GPU();
  const IndexerCase c = testing_util::MakeIndexerSeedCase(std::vector<int32_t>(16, 6), 0);  // N_d = 96
  std::vector<int32_t> fewer(16, 1);
  fewer[3] = 0;
  fewer[9] = 5;
  const IndexerImages before = IndexerImages::Garbage(c, 11);
  const auto images = CaptureAndReplay(IdxImpl::kFused, c, {c.lens, fewer}, before);
  IndexerCase shrunk = testing_util::WithStaleHost(c, fewer);
  EXPECT_EQ(images[1], testing_util::ExpectedFusedImage(shrunk, before));
  EXPECT_EQ(testing_util::DiffAgainstReference(shrunk, images[1]).Total(), 0);
}

// (c)'s chain captured on one split and replayed after the device rewrote qsl to another with
// the same total (what adaptive verification does): it reads the device lengths at replay, so
// only padding residue differs. Only the host total is frozen at capture.
TEST(IndexerGpuGraph, CapturedChainFollowsTheDeviceSplit) {
  DS_REQUIRE_GPU();
  const IndexerCase c = testing_util::MakeIndexerSeedCase({0, 2, 6, 0, 4}, 17);
  const auto reversed = testing_util::Reversed(c.lens);
  const IndexerImages before = IndexerImages::Filled(c, kPoison);
  const auto images = CaptureAndReplay(IdxImpl::kChain, c, {reversed}, before);
  const IndexerCase stale = testing_util::WithStaleHost(c, reversed);
  EXPECT_EQ(images[0], testing_util::ExpectedChainImage(stale, before));
  EXPECT_EQ(testing_util::DiffAgainstReference(stale, images[0]).StaleFields(), 0);
}

// The statistics of sim/exec/gpu_timing.cuh are host code: checked here without a device.
TEST(GpuTimingStats, PercentilesInterpolateBetweenRanksLikeNumpy) {
  const timing::SampleStats s = timing::Summarize({9, 1, 5, 3, 7, 2, 8, 4, 6, 10});
  EXPECT_EQ(s.n, 10);
  EXPECT_DOUBLE_EQ(s.median_us, 5.5);
  EXPECT_DOUBLE_EQ(s.p10_us, 1.9);  // numpy.percentile(range(1, 11), 10)
  EXPECT_DOUBLE_EQ(s.p90_us, 9.1);
  EXPECT_DOUBLE_EQ(s.mean_us, 5.5);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.max_us, 10);
  EXPECT_DOUBLE_EQ(timing::Summarize({4.0}).p90_us, 4.0);
  EXPECT_EQ(timing::Summarize({}).n, 0);
  // At least 2 x L2, and never below 256 MiB (H200: 60 MiB of L2 -> 256 MiB).
  EXPECT_EQ(timing::FlushBytes(size_t{60} << 20, timing::kMinFlushBytes), size_t{256} << 20);
  EXPECT_EQ(timing::FlushBytes(size_t{200} << 20, timing::kMinFlushBytes), size_t{400} << 20);
}

}  // namespace
}  // namespace dspark
