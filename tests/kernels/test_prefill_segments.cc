#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "kernels/prefill_segments.cuh"
#include "kernels/reference/prefill_segments.h"
#include "tests/kernels/builder_test_util.h"

namespace dspark {
namespace {

using testing_util::BatchSpec;
using testing_util::BuildBatch;
using testing_util::SegmentSpec;
using testing_util::TestBatch;

constexpr int32_t kPoison = -99;
constexpr int32_t kSeg = 1024;
constexpr int32_t kCellsPast = 2;  // cells past each buffer's end, must stay untouched

// Persistent output buffers of one builder, sized once like an engine's.
struct SegmentBuffers {
  explicit SegmentBuffers(int32_t max_segments)
      : max_segments(max_segments),
        seg_qsl(max_segments + 1 + kCellsPast, kPoison),
        seg_seq_lens(max_segments + kCellsPast, kPoison),
        seg_count(1 + kCellsPast, kPoison) {}
  int32_t max_segments;
  std::vector<int32_t> seg_qsl;
  std::vector<int32_t> seg_seq_lens;
  std::vector<int32_t> seg_count;

  std::vector<int32_t> Qsl() const { return {seg_qsl.begin(), seg_qsl.begin() + max_segments + 1}; }
  std::vector<int32_t> SeqLens() const { return {seg_seq_lens.begin(), seg_seq_lens.begin() + max_segments}; }
  int32_t Count() const { return seg_count[0]; }
  void ExpectPastEndUntouched() const {
    for (int32_t i = 0; i < kCellsPast; ++i) {
      EXPECT_EQ(seg_qsl[max_segments + 1 + i], kPoison);
      EXPECT_EQ(seg_seq_lens[max_segments + i], kPoison);
      EXPECT_EQ(seg_count[1 + i], kPoison);
    }
  }
};

int32_t MaxSegmentsFor(const TestBatch& b) {
  return PrefillSegmentBound(b.sizes.num_reqs - b.sizes.num_decodes, b.sizes.capacity, kSeg);
}

void Build(const TestBatch& b, bool fp8, SegmentBuffers& buf) {
  const PrefillSegmentParams p =
      MakePrefillSegmentParams(b.sizes, b.device(), ModelConsts{}, fp8, buf.seg_qsl.data(), buf.seg_seq_lens.data(),
                               buf.seg_count.data(), buf.max_segments);
  const absl::Status ok = CanImplementPrefillSegments(p, b.sizes.capacity);
  ASSERT_TRUE(ok.ok()) << ok;
  EmulatePrefillSegments(p);
}

// Checks the segmentation against its definition, without the reference: tiling, lengths,
// BF16 grouping, and that every prefill token keeps its absolute position.
void ExpectSegmentationHolds(const TestBatch& b, bool fp8, const SegmentBuffers& buf) {
  const int32_t num_reqs = b.sizes.num_reqs, first_prefill = b.sizes.num_decodes;
  const int32_t count = buf.Count();
  const std::vector<int32_t> qsl = buf.Qsl(), lens = buf.SeqLens();
  int32_t want_count = 0;
  for (int32_t r = first_prefill; r < num_reqs; ++r) {
    const int32_t qlen = b.qsl[r + 1] - b.qsl[r];
    want_count += fp8 ? (qlen + kSeg - 1) / kSeg : 1;
  }
  ASSERT_EQ(count, want_count);
  ASSERT_LE(count, buf.max_segments);
  // #57207: starts count from the first prefill token; cu[-1] is the prefill token count.
  const int32_t base = b.qsl[first_prefill];
  const int32_t end = b.qsl[num_reqs] - base;
  for (int32_t k = count; k <= buf.max_segments; ++k) ASSERT_EQ(qsl[k], end) << "seg_qsl tail " << k;
  for (int32_t k = count; k < buf.max_segments; ++k) ASSERT_EQ(lens[k], 0) << "seg_seq_lens tail " << k;
  if (count > 0) {
    EXPECT_EQ(qsl[0], 0);
  }
  for (int32_t k = 0; k < count; ++k) {
    const int32_t seg_len = qsl[k + 1] - qsl[k];
    ASSERT_GE(seg_len, 0) << "segment " << k;
    if (fp8) {
      ASSERT_GE(seg_len, 1) << "segment " << k;
      ASSERT_LE(seg_len, kSeg) << "segment " << k;
    } else {
      const int32_t r = first_prefill + k;  // BF16: one segment per prefill request, in order
      ASSERT_EQ(qsl[k], b.qsl[r] - base) << "segment " << k;
      ASSERT_EQ(seg_len, b.qsl[r + 1] - b.qsl[r]) << "segment " << k;
      ASSERT_EQ(lens[k], b.seq_lens[r]) << "segment " << k;
    }
    // Each token of the segment: same request, and the position survives segmentation.
    for (int32_t off = 0; off < seg_len; ++off) {
      const int32_t t = base + qsl[k] + off;
      ASSERT_EQ(b.ReqOf(t), b.ReqOf(base + qsl[k])) << "segment " << k << " crosses a request boundary";
      ASSERT_EQ(lens[k] - seg_len + off, b.PosOf(t)) << "segment " << k << " token " << t;
    }
  }
}

class PrefillSegments : public ::testing::TestWithParam<std::tuple<BatchSpec, bool>> {};

TEST_P(PrefillSegments, EmulatedMatchesReferenceAndDefinition) {
  const auto& [spec, fp8] = GetParam();
  const TestBatch b = BuildBatch(spec);
  SegmentBuffers buf(MaxSegmentsFor(b));
  Build(b, fp8, buf);
  const ref::PrefillSegments want = ref::Segments(b.sizes, b.device(), fp8, kSeg, buf.max_segments);
  EXPECT_EQ(buf.Count(), want.count);
  EXPECT_EQ(buf.Qsl(), want.seg_qsl);
  EXPECT_EQ(buf.SeqLens(), want.seg_seq_lens);
  buf.ExpectPastEndUntouched();
  ExpectSegmentationHolds(b, fp8, buf);
}

// seq_lens += 17, rebuild into the same buffers: the boundaries stay, every real segment's
// sequence length moves by exactly 17, and the tail stays 0.
TEST_P(PrefillSegments, RebuildAfterSeqLensGrowFollowsDeviceValues) {
  const auto& [spec, fp8] = GetParam();
  TestBatch b = BuildBatch(spec);
  SegmentBuffers buf(MaxSegmentsFor(b));
  Build(b, fp8, buf);
  const std::vector<int32_t> qsl_before = buf.Qsl(), lens_before = buf.SeqLens();
  const int32_t count_before = buf.Count();
  for (int32_t& s : b.seq_lens) s += 17;
  Build(b, fp8, buf);
  EXPECT_EQ(buf.Count(), count_before);
  EXPECT_EQ(buf.Qsl(), qsl_before);
  const std::vector<int32_t> lens_after = buf.SeqLens();
  for (int32_t k = 0; k < buf.max_segments; ++k)
    ASSERT_EQ(lens_after[k], lens_before[k] + (k < count_before ? 17 : 0)) << "segment " << k;
  ExpectSegmentationHolds(b, fp8, buf);
}

std::vector<BatchSpec> SegmentSpecs() {
  std::vector<BatchSpec> v;
  for (int32_t prefix : {0, 7, 99000}) {
    const std::string p = "_prefix" + std::to_string(prefix);
    v.push_back(SegmentSpec("q8192" + p, {8192}, prefix));
    v.push_back(SegmentSpec("q1_1_2051_19_1024" + p, {1, 1, 2051, 19, 1024}, prefix));
    // The first two requests are decodes: a mixed batch, with CUDA-graph padding after.
    BatchSpec mixed = SegmentSpec("mixed_2dec_q1_1_2051_19_1024" + p, {1, 1, 2051, 19, 1024}, prefix, 2, 3);
    mixed.padding_tokens = 6;
    mixed.capacity_slack = 20;
    v.push_back(mixed);
  }
  for (int32_t n : {0, 1, 2, 3, 7, 17, 65, 257, 1023, 1024, 1025, 2048, 2049})
    v.push_back(SegmentSpec("one_prefill_" + std::to_string(n), {n}, n % 3 == 0 ? 0 : 55));
  {
    // Zero-length prefill requests between real ones, a zero-length decode, padding requests.
    BatchSpec s = SegmentSpec("zero_length_prefills_padded", {6, 0, 4, 0, 1025, 0, 3}, 9, 3, 4);
    s.padding_tokens = 5;
    v.push_back(s);
  }
  v.push_back(SegmentSpec("all_decodes", {1, 6, 6, 2}, 100, 4, 0));
  v.push_back(SegmentSpec("no_requests", {}, 0));
  {
    // More prefill requests than scan threads: each thread owns a run of requests.
    BatchSpec s;
    s.name = "prefills_3000";
    for (int32_t r = 0; r < 3000; ++r) {
      s.qlens.push_back(r % 250 == 0 ? 2100 : (r % 7 == 3 ? 0 : 1 + r % 5));
      s.prefixes.push_back(r % 11);
    }
    s.num_decodes = 40;
    s.padding_reqs = 16;
    s.extra_cols = 0;
    s.stride_slack = 0;
    v.push_back(s);
  }
  for (uint64_t seed = 1; seed <= 8; ++seed) v.push_back(testing_util::RandomSpec(seed + 100, 5000));
  return v;
}

INSTANTIATE_TEST_SUITE_P(Batches, PrefillSegments,
                         ::testing::Combine(::testing::ValuesIn(SegmentSpecs()), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<BatchSpec, bool>>& info) {
                           return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_fp8" : "_bf16");
                         });

// The seed's 8192-token request with a 99000-token prefix, worked out by hand.
TEST(PrefillSegmentsByHand, Q8192Prefix99000) {
  const TestBatch b = BuildBatch(SegmentSpec("q8192", {8192}, 99000));
  SegmentBuffers buf(MaxSegmentsFor(b));
  Build(b, true, buf);
  ASSERT_EQ(buf.Count(), 8);
  for (int32_t k = 0; k < 8; ++k) {
    EXPECT_EQ(buf.seg_qsl[k], 1024 * k);
    EXPECT_EQ(buf.seg_seq_lens[k], 99000 + 1024 * (k + 1));
  }
  EXPECT_EQ(buf.seg_qsl[8], 8192);
  Build(b, false, buf);
  ASSERT_EQ(buf.Count(), 1);
  EXPECT_EQ(buf.seg_qsl[0], 0);
  EXPECT_EQ(buf.seg_qsl[1], 8192);
  EXPECT_EQ(buf.seg_seq_lens[0], 99000 + 8192);
  EXPECT_EQ(buf.seg_seq_lens[1], 0);  // the FP8 build's second segment, cleared
}

// vLLM's test_segments_preserve_positions_and_replay_updates (#57207): queries
// [1, 1, 2051, 19, 1024], prefixes [5000, 9000, 3, 0, 99000], 2 decodes (docs/design.md s.3).
TEST(PrefillSegmentsByHand, Vllm57207TestCase) {
  BatchSpec spec = SegmentSpec("vllm_57207", {1, 1, 2051, 19, 1024}, 0, 2);
  spec.prefixes = {5000, 9000, 3, 0, 99000};
  const TestBatch b = BuildBatch(spec);
  SegmentBuffers buf(MaxSegmentsFor(b));
  Build(b, true, buf);
  ASSERT_EQ(buf.Count(), 5);
  const std::vector<int32_t> starts(buf.seg_qsl.begin(), buf.seg_qsl.begin() + 6);
  EXPECT_EQ(starts, (std::vector<int32_t>{0, 1024, 2048, 2051, 2070, 3094}));
  const std::vector<int32_t> lens(buf.seg_seq_lens.begin(), buf.seg_seq_lens.begin() + 5);
  EXPECT_EQ(lens, (std::vector<int32_t>{1027, 2051, 2054, 19, 100024}));
  EXPECT_EQ(buf.seg_qsl[5], b.qsl[5] - b.qsl[2]) << "cu[-1] is the prefill token count";
  const ref::PrefillSegments want = ref::Segments(b.sizes, b.device(), true, kSeg, buf.max_segments);
  EXPECT_EQ(buf.Qsl(), want.seg_qsl);
  ExpectSegmentationHolds(b, true, buf);
}

TEST(PrefillSegmentsContract, BoundAndRejections) {
  EXPECT_EQ(PrefillSegmentBound(5, 8192, 1024), 13);
  EXPECT_EQ(PrefillSegmentBound(0, 1, 1024), 1);
  // Worst case for the bound: every prefill request just over a segment.
  EXPECT_GE(PrefillSegmentBound(5, 5 * 1025, 1024), 5 * 2);
  int32_t cell = 0;
  PrefillSegmentParams p{&cell, &cell, &cell, &cell, &cell, 4, 1, 0, 1024, true};
  p.max_segments = PrefillSegmentBound(3, 2048, 1024);
  EXPECT_TRUE(CanImplementPrefillSegments(p, 2048).ok());
  EXPECT_EQ(CanImplementPrefillSegments(p, 2049).code(), absl::StatusCode::kOutOfRange);
  PrefillSegmentParams too_many_decodes = p;
  too_many_decodes.num_decodes = 5;
  EXPECT_EQ(CanImplementPrefillSegments(too_many_decodes, 0).code(), absl::StatusCode::kOutOfRange);
  PrefillSegmentParams zero_segment = p;
  zero_segment.segment_len = 0;
  EXPECT_EQ(CanImplementPrefillSegments(zero_segment, 0).code(), absl::StatusCode::kInvalidArgument);
  PrefillSegmentParams no_count = p;
  no_count.seg_count = nullptr;
  EXPECT_EQ(CanImplementPrefillSegments(no_count, 0).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dspark
