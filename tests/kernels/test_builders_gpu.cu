// GPU tests of the SWA, compressed-slot (ratio 1, 2), compressor-ring and prefill-segmentation
// kernels: eager launches against the CPU references, and CUDA-graph replays after the device
// boundaries or sequence lengths were rewritten in place.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/compressed_slots.cuh"
#include "kernels/prefill_segments.cuh"
#include "kernels/reference/compressed_slots.h"
#include "kernels/reference/prefill_segments.h"
#include "kernels/reference/ring_slots.h"
#include "kernels/reference/swa.h"
#include "kernels/ring_slots.cuh"
#include "kernels/swa.cuh"
#include "kernels/token_map.cuh"
#include "tests/kernels/builder_test_util.h"
#include "tests/common/gpu_test_util.cuh"

namespace dspark {
namespace {

using testing_util::BatchSpec;
using testing_util::BuildBatch;
using testing_util::TestBatch;

constexpr int32_t kPoison = -99;
constexpr int32_t kPastEnd = 3;  // cells past each output's extent; must stay poisoned

// A device buffer of max(count, 1) elements (an engine's buffers exist even when empty),
// filled with `fill`.
template <class T>
DeviceBuffer<T> Filled(size_t count, T fill) {
  return DeviceBuffer<T>(std::vector<T>(std::max<size_t>(count, 1), fill));
}

template <class T>
DeviceBuffer<T> Uploaded(const std::vector<T>& host) {
  DeviceBuffer<T> d(std::max<size_t>(host.size(), 1));
  d.Upload(host);
  return d;
}

template <class T>
std::vector<T> Head(const std::vector<T>& v, size_t n) {
  return std::vector<T>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
}

template <class T>
void ExpectPoisonFrom(const std::vector<T>& v, size_t from, const char* what) {
  for (size_t i = from; i < v.size(); ++i) EXPECT_EQ(v[i], static_cast<T>(kPoison)) << what << " cell " << i;
}

int32_t MaxSegmentsFor(const TestBatch& b) {
  return PrefillSegmentBound(b.sizes.num_reqs - b.sizes.num_decodes, b.sizes.capacity, ModelConsts{}.prefill_segment);
}

// The device copy of one step's inputs and every builder's persistent outputs (poisoned).
struct GpuStep {
  explicit GpuStep(const TestBatch& b)
      : sizes(b.sizes),
        qsl(Uploaded(b.qsl)),
        seq_lens(Uploaded(b.seq_lens)),
        block_table(Uploaded(b.block_table)),
        slot_mapping(Uploaded(b.slot_mapping)),
        mapping(Filled<int32_t>(b.sizes.num_tokens, kPoison)),
        swa_lens(Filled<int32_t>(b.sizes.num_tokens + kPastEnd, kPoison)),
        swa_indices(Filled<int32_t>(static_cast<size_t>(b.sizes.num_tokens + kPastEnd) * consts.swa_window, kPoison)),
        compressed1(Filled<int64_t>(b.sizes.capacity + kPastEnd, kPoison)),
        compressed2(Filled<int64_t>(b.sizes.capacity + kPastEnd, kPoison)),
        ring(Filled<int64_t>(b.sizes.capacity + kPastEnd, kPoison)),
        max_segments(MaxSegmentsFor(b)),
        fp8_seg_qsl(Filled<int32_t>(max_segments + 1 + kPastEnd, kPoison)),
        fp8_seg_seq_lens(Filled<int32_t>(max_segments + kPastEnd, kPoison)),
        fp8_seg_count(Filled<int32_t>(1 + kPastEnd, kPoison)),
        bf16_seg_qsl(Filled<int32_t>(max_segments + 1 + kPastEnd, kPoison)),
        bf16_seg_seq_lens(Filled<int32_t>(max_segments + kPastEnd, kPoison)),
        bf16_seg_count(Filled<int32_t>(1 + kPastEnd, kPoison)) {
    // The uploads ran on the legacy stream, which a non-blocking stream does not wait for, and a
    // pageable upload may return before its DMA lands.
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  DeviceBatch device() const { return {qsl.get(), seq_lens.get(), block_table.get(), slot_mapping.get()}; }

  PrefillSegmentParams SegmentParams(bool fp8) const {
    return fp8 ? MakePrefillSegmentParams(sizes, device(), consts, true, fp8_seg_qsl.get(), fp8_seg_seq_lens.get(),
                                          fp8_seg_count.get(), max_segments)
               : MakePrefillSegmentParams(sizes, device(), consts, false, bf16_seg_qsl.get(),
                                          bf16_seg_seq_lens.get(), bf16_seg_count.get(), max_segments);
  }

  // Launches every builder (the mapping kernel first when the builders share it); returns the
  // number of kernels enqueued.
  int Enqueue(bool shared_mapping, cudaStream_t s) const {
    int launches = 0;
    const int32_t* map = shared_mapping ? mapping.get() : nullptr;
    if (shared_mapping && sizes.num_tokens > 0) {
      CUDA_CHECK(LaunchTokenMap({qsl.get(), mapping.get(), sizes.num_reqs, sizes.num_tokens}, s));
      ++launches;
    }
    const SwaParams swa = MakeSwaParams(sizes, device(), consts, map, swa_lens.get(), swa_indices.get());
    const CompressedSlotParams c1 = MakeCompressedSlotParams(sizes, device(), consts, 1, map, compressed1.get());
    const CompressedSlotParams c2 = MakeCompressedSlotParams(sizes, device(), consts, 2, map, compressed2.get());
    const RingSlotParams rg = MakeRingSlotParams(sizes, device(), consts, map, ring.get());
    const PrefillSegmentParams fp8 = SegmentParams(true), bf16 = SegmentParams(false);
    EXPECT_TRUE(CanImplementSwa(swa).ok()) << CanImplementSwa(swa);
    EXPECT_TRUE(CanImplementCompressedSlots(c1).ok()) << CanImplementCompressedSlots(c1);
    EXPECT_TRUE(CanImplementCompressedSlots(c2).ok()) << CanImplementCompressedSlots(c2);
    EXPECT_TRUE(CanImplementRingSlots(rg).ok()) << CanImplementRingSlots(rg);
    EXPECT_TRUE(CanImplementPrefillSegments(fp8, sizes.capacity).ok());
    EXPECT_TRUE(CanImplementPrefillSegments(bf16, sizes.capacity).ok());
    CUDA_CHECK(LaunchSwa(swa, s));
    launches += sizes.num_tokens > 0;
    CUDA_CHECK(LaunchCompressedSlots(c1, s));
    CUDA_CHECK(LaunchCompressedSlots(c2, s));
    CUDA_CHECK(LaunchRingSlots(rg, s));
    launches += sizes.capacity > 0 ? 3 : 0;
    CUDA_CHECK(LaunchPrefillSegments(fp8, s));
    CUDA_CHECK(LaunchPrefillSegments(bf16, s));
    launches += 2;
    return launches;
  }

  // Compares every output with the reference of `b` (the host image of the device inputs).
  void ExpectMatchesReference(const TestBatch& b) const {
    const int32_t n = sizes.num_tokens, cap = sizes.capacity, w = consts.swa_window;
    const ref::SwaMetadata swa = ref::Swa(sizes, b.device(), w, consts.swa_block_size);
    const std::vector<int32_t> lens = swa_lens.Download(), idx = swa_indices.Download();
    EXPECT_EQ(Head(lens, n), swa.lens);
    EXPECT_EQ(Head(idx, static_cast<size_t>(n) * w), swa.indices);
    ExpectPoisonFrom(lens, n, "swa_lens");
    ExpectPoisonFrom(idx, static_cast<size_t>(n) * w, "swa_indices");

    const std::vector<int64_t> c1 = compressed1.Download(), c2 = compressed2.Download(), rg = ring.Download();
    EXPECT_EQ(Head(c1, cap), ref::CompressedSlots(sizes, b.device(), 1, consts.mla_block_size));
    EXPECT_EQ(Head(c2, cap), ref::CompressedSlots(sizes, b.device(), 2, consts.mla_block_size));
    EXPECT_EQ(Head(rg, cap), ref::RingSlots(sizes, b.device(), CompressorRingCapacity(consts.spec_k)));
    ExpectPoisonFrom(c1, cap, "compressed ratio 1");
    ExpectPoisonFrom(c2, cap, "compressed ratio 2");
    ExpectPoisonFrom(rg, cap, "ring");

    for (bool fp8 : {true, false}) {
      SCOPED_TRACE(fp8 ? "fp8 segmentation" : "bf16 segmentation");
      const ref::PrefillSegments want = ref::Segments(sizes, b.device(), fp8, consts.prefill_segment, max_segments);
      const std::vector<int32_t> q = (fp8 ? fp8_seg_qsl : bf16_seg_qsl).Download();
      const std::vector<int32_t> sl = (fp8 ? fp8_seg_seq_lens : bf16_seg_seq_lens).Download();
      const std::vector<int32_t> cnt = (fp8 ? fp8_seg_count : bf16_seg_count).Download();
      EXPECT_EQ(cnt[0], want.count);
      EXPECT_EQ(Head(q, max_segments + 1), want.seg_qsl);
      EXPECT_EQ(Head(sl, max_segments), want.seg_seq_lens);
      ExpectPoisonFrom(q, max_segments + 1, "seg_qsl");
      ExpectPoisonFrom(sl, max_segments, "seg_seq_lens");
      ExpectPoisonFrom(cnt, 1, "seg_count");
    }
  }

  ModelConsts consts;
  BatchSizes sizes;
  DeviceBuffer<int32_t> qsl, seq_lens, block_table;
  DeviceBuffer<int64_t> slot_mapping;
  DeviceBuffer<int32_t> mapping, swa_lens, swa_indices;
  DeviceBuffer<int64_t> compressed1, compressed2, ring;
  int32_t max_segments;
  DeviceBuffer<int32_t> fp8_seg_qsl, fp8_seg_seq_lens, fp8_seg_count;
  DeviceBuffer<int32_t> bf16_seg_qsl, bf16_seg_seq_lens, bf16_seg_count;
};

std::string BuilderCaseName(const ::testing::TestParamInfo<std::tuple<BatchSpec, bool>>& info) {
  return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_shared_mapping" : "_searched");
}

class BuildersGpu : public ::testing::TestWithParam<std::tuple<BatchSpec, bool>> {};

TEST_P(BuildersGpu, EagerMatchesReference) {
  DS_REQUIRE_GPU();
  const auto& [spec, shared_mapping] = GetParam();
  const TestBatch b = BuildBatch(spec);
  GpuStep step(b);
  CudaStream stream;
  step.Enqueue(shared_mapping, stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  step.ExpectMatchesReference(b);
}

INSTANTIATE_TEST_SUITE_P(Batches, BuildersGpu,
                         ::testing::Combine(::testing::ValuesIn(testing_util::TokenBuilderSpecs()), ::testing::Bool()),
                         BuilderCaseName);

// Batches whose real requests' query lengths can be reversed with the sequence lengths kept:
// every request's seq_len covers the query length it gets after the reversal.
std::vector<BatchSpec> ReplaySpecs() {
  std::vector<BatchSpec> v;
  {
    BatchSpec s = testing_util::Uniform("adaptive_verify_16", 16, 0, 300);
    s.qlens = {1, 6, 3, 6, 2, 0, 4, 5, 6, 1, 1, 2, 6, 3, 6, 2};
    s.num_decodes = 16;
    s.padding_reqs = 2;
    s.padding_tokens = 6;
    s.capacity_slack = 9;
    s.null_first_block_every = 5;
    v.push_back(s);
  }
  {
    BatchSpec s;
    s.name = "mixed_decode_prefill";
    s.qlens = {4, 4, 2, 6, 1, 300, 0, 2051};
    s.prefixes = {2100, 2051, 2300, 99000, 2060, 2052, 4000, 7};
    s.num_decodes = 5;
    s.padding_reqs = 2;
    s.padding_tokens = 7;
    s.capacity_slack = 33;
    s.unstored_token_every = 5;
    v.push_back(s);
  }
  {
    BatchSpec s;
    s.name = "over_shared_qsl_cap";
    for (int32_t r = 0; r < 1100; ++r) {
      s.qlens.push_back(r % 4 == 1 ? 0 : 1 + r % 6);
      s.prefixes.push_back(6 + (r * 17) % 300);
    }
    s.num_decodes = 1050;
    s.padding_reqs = 3;
    s.padding_tokens = 4;
    s.null_first_block_every = 7;
    v.push_back(s);
  }
  // Random batches whose reversal changes the boundaries (not palindromic); prefixes raised to
  // the longest query so every position stays >= 0.
  for (uint64_t seed = 201; v.size() < 7; ++seed) {
    BatchSpec s = testing_util::RandomSpec(seed);
    if (std::equal(s.qlens.begin(), s.qlens.end(), s.qlens.rbegin())) continue;
    const int32_t longest = *std::max_element(s.qlens.begin(), s.qlens.end());
    for (int32_t& p : s.prefixes) p = std::max(p, longest);
    v.push_back(s);
  }
  return v;
}

class BuildersGpuReplay : public ::testing::TestWithParam<std::tuple<BatchSpec, bool>> {};

// Capture once with plan A, rewrite the device qsl in place (same total, reversed lengths, as
// adaptive verification does), replay: every output follows the new device boundaries, and
// every cell written by the first replay is rewritten.
TEST_P(BuildersGpuReplay, GraphReplayFollowsRewrittenDeviceQsl) {
  DS_REQUIRE_GPU();
  const auto& [spec, shared_mapping] = GetParam();
  TestBatch b = BuildBatch(spec);
  GpuStep step(b);
  CudaStream stream;
  step.Enqueue(shared_mapping, stream.get());  // warm-up outside capture (module loading)
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));

  CudaGraph graph;
  graph.BeginCapture(stream.get());
  const int launches = step.Enqueue(shared_mapping, stream.get());
  graph.EndCapture(stream.get());
  EXPECT_EQ(graph.NodeCount(), static_cast<size_t>(launches));
  graph.Replay(stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  {
    SCOPED_TRACE("plan A");
    step.ExpectMatchesReference(b);
  }

  const std::vector<int32_t> qsl_a = b.qsl;
  testing_util::ReverseRealLengths(b, static_cast<int32_t>(spec.qlens.size()));
  ASSERT_EQ(b.qsl.back(), qsl_a.back()) << "the rewrite must keep the total";
  ASSERT_NE(b.qsl, qsl_a) << "the rewrite must change the boundaries";
  CUDA_CHECK(cudaMemcpyAsync(step.qsl.get(), b.qsl.data(), b.qsl.size() * sizeof(int32_t), cudaMemcpyHostToDevice,
                             stream.get()));
  graph.Replay(stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  SCOPED_TRACE("plan B: reversed lengths");
  step.ExpectMatchesReference(b);
}

INSTANTIATE_TEST_SUITE_P(Batches, BuildersGpuReplay,
                         ::testing::Combine(::testing::ValuesIn(ReplaySpecs()), ::testing::Bool()), BuilderCaseName);

class PrefillSegmentsGpuReplay : public ::testing::TestWithParam<std::tuple<BatchSpec, bool>> {};

// The seed's graph test: capture the segmentation kernel, add 17 to the device seq_lens in
// place, replay; the same buffers now hold sequence lengths moved by exactly 17.
TEST_P(PrefillSegmentsGpuReplay, ReplaySeesSeqLensPlus17) {
  DS_REQUIRE_GPU();
  const auto& [spec, fp8] = GetParam();
  TestBatch b = BuildBatch(spec);
  GpuStep step(b);
  const PrefillSegmentParams p = step.SegmentParams(fp8);
  ASSERT_TRUE(CanImplementPrefillSegments(p, b.sizes.capacity).ok());
  CudaStream stream;
  CUDA_CHECK(LaunchPrefillSegments(p, stream.get()));  // warm-up outside capture
  CudaGraph graph;
  graph.BeginCapture(stream.get());
  CUDA_CHECK(LaunchPrefillSegments(p, stream.get()));
  graph.EndCapture(stream.get());
  EXPECT_EQ(graph.NodeCount(), 1u);
  graph.Replay(stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));

  const DeviceBuffer<int32_t>& d_qsl = fp8 ? step.fp8_seg_qsl : step.bf16_seg_qsl;
  const DeviceBuffer<int32_t>& d_lens = fp8 ? step.fp8_seg_seq_lens : step.bf16_seg_seq_lens;
  const DeviceBuffer<int32_t>& d_count = fp8 ? step.fp8_seg_count : step.bf16_seg_count;
  const int32_t m = step.max_segments;
  const ref::PrefillSegments before = ref::Segments(b.sizes, b.device(), fp8, 1024, m);
  ASSERT_EQ(d_count.Download()[0], before.count);
  ASSERT_EQ(Head(d_qsl.Download(), m + 1), before.seg_qsl);
  ASSERT_EQ(Head(d_lens.Download(), m), before.seg_seq_lens);

  for (int32_t& s : b.seq_lens) s += 17;
  CUDA_CHECK(cudaMemcpyAsync(step.seq_lens.get(), b.seq_lens.data(), b.seq_lens.size() * sizeof(int32_t),
                             cudaMemcpyHostToDevice, stream.get()));
  graph.Replay(stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  const ref::PrefillSegments after = ref::Segments(b.sizes, b.device(), fp8, 1024, m);
  EXPECT_EQ(d_count.Download()[0], before.count);
  EXPECT_EQ(Head(d_qsl.Download(), m + 1), before.seg_qsl);
  const std::vector<int32_t> lens = Head(d_lens.Download(), m);
  EXPECT_EQ(lens, after.seg_seq_lens);
  for (int32_t k = 0; k < m; ++k)
    ASSERT_EQ(lens[k], before.seg_seq_lens[k] + (k < before.count ? 17 : 0)) << "segment " << k;
}

std::vector<BatchSpec> SeedSegmentSpecs() {
  std::vector<BatchSpec> v;
  for (int32_t prefix : {0, 7, 99000}) {
    const std::string p = "_prefix" + std::to_string(prefix);
    v.push_back(testing_util::SegmentSpec("q8192" + p, {8192}, prefix));
    v.push_back(testing_util::SegmentSpec("q1_1_2051_19_1024" + p, {1, 1, 2051, 19, 1024}, prefix));
    BatchSpec mixed = testing_util::SegmentSpec("mixed_2dec_padded" + p, {1, 1, 2051, 19, 1024}, prefix, 2, 3);
    mixed.padding_tokens = 6;
    v.push_back(mixed);
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(SeedCases, PrefillSegmentsGpuReplay,
                         ::testing::Combine(::testing::ValuesIn(SeedSegmentSpecs()), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<BatchSpec, bool>>& info) {
                           return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_fp8" : "_bf16");
                         });

}  // namespace
}  // namespace dspark
