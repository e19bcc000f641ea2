#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "kernels/reference/swa.h"
#include "kernels/swa.cuh"
#include "kernels/token_map.cuh"
#include "tests/kernels/builder_test_util.h"

namespace dspark {
namespace {

using testing_util::BatchSpec;
using testing_util::BuildBatch;
using testing_util::TestBatch;

constexpr int32_t kPoison = -99;
constexpr int32_t kRowsPastN = 3;  // rows the kernel must leave alone

struct SwaOut {
  std::vector<int32_t> lens;     // [N + kRowsPastN]
  std::vector<int32_t> indices;  // [N + kRowsPastN, window]
};

// Runs the fused kernel body under the grid emulator over poisoned buffers. With
// `shared_mapping`, the token-mapping kernel runs first and the builder reads its output, as the
// `fused` impl does; otherwise the builder searches qsl itself.
SwaOut RunEmulated(const TestBatch& b, bool shared_mapping, const ModelConsts& m = {}) {
  const int32_t n = b.sizes.num_tokens;
  SwaOut out{std::vector<int32_t>(n + kRowsPastN, kPoison),
             std::vector<int32_t>(static_cast<size_t>(n + kRowsPastN) * m.swa_window, kPoison)};
  std::vector<int32_t> mapping(n + 1, kPoison);
  if (shared_mapping) EmulateTokenMap({b.qsl.data(), mapping.data(), b.sizes.num_reqs, n});
  const SwaParams p = MakeSwaParams(b.sizes, b.device(), m, shared_mapping ? mapping.data() : nullptr,
                                    out.lens.data(), out.indices.data());
  EXPECT_TRUE(CanImplementSwa(p).ok()) << CanImplementSwa(p);
  EmulateSwa(p);
  return out;
}

void ExpectMatchesReference(const TestBatch& b, const SwaOut& got, const ModelConsts& m) {
  const int32_t n = b.sizes.num_tokens;
  const ref::SwaMetadata want = ref::Swa(b.sizes, b.device(), m.swa_window, m.swa_block_size);
  const std::vector<int32_t> lens(got.lens.begin(), got.lens.begin() + n);
  const std::vector<int32_t> indices(got.indices.begin(), got.indices.begin() + static_cast<size_t>(n) * m.swa_window);
  EXPECT_EQ(lens, want.lens);
  EXPECT_EQ(indices, want.indices);
  // Rows at or past N belong to no graph of this size and stay untouched.
  for (size_t i = n; i < got.lens.size(); ++i) EXPECT_EQ(got.lens[i], kPoison) << "swa_lens row " << i;
  for (size_t i = static_cast<size_t>(n) * m.swa_window; i < got.indices.size(); ++i)
    ASSERT_EQ(got.indices[i], kPoison) << "swa_indices cell " << i;
}

class SwaBuilder : public ::testing::TestWithParam<std::tuple<BatchSpec, bool>> {};

TEST_P(SwaBuilder, EmulatedMatchesReference) {
  const auto& [spec, shared_mapping] = GetParam();
  const TestBatch b = BuildBatch(spec);
  ExpectMatchesReference(b, RunEmulated(b, shared_mapping), ModelConsts{});
}

// Odd window and block sizes: a window shorter than the 32 lanes of a row, non-power-of-two
// block sizes, and windows that are no multiple of 32. Block sizes stay >= 64 because the test
// tables have columns for 64-token blocks only.
TEST_P(SwaBuilder, EmulatedMatchesReferenceWithOddWindowAndBlockSize) {
  const auto& [spec, shared_mapping] = GetParam();
  const TestBatch b = BuildBatch(spec);
  for (auto [window, block_size] : {std::pair{7, 96}, std::pair{200, 64}, std::pair{33, 65}}) {
    SCOPED_TRACE(testing::Message() << "window " << window << " block_size " << block_size);
    ModelConsts m;
    m.swa_window = window;
    m.swa_block_size = block_size;
    ExpectMatchesReference(b, RunEmulated(b, shared_mapping, m), m);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Batches, SwaBuilder,
    ::testing::Combine(::testing::ValuesIn(testing_util::TokenBuilderSpecs()), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<BatchSpec, bool>>& info) {
      return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_shared_mapping" : "_searched");
    });

// One request with an empty prefix (positions 0..199) over blocks {11, 22, 33, 44}, plus one
// graph padding token; every expected value worked out by hand.
TEST(SwaBuilderByHand, WindowClippedAtZeroAndCrossingBlocks) {
  TestBatch b;
  b.qsl = {0, 200};
  b.seq_lens = {200};
  b.block_table = {11, 22, 33, 44, testing_util::kUnreadBlockCell};
  b.slot_mapping.assign(201, -1);  // token 200 is graph padding
  for (int32_t t = 0; t < 200; ++t) b.slot_mapping[t] = t;  // any slot >= 0: a valid token
  b.sizes.num_reqs = 1;
  b.sizes.num_tokens = 201;
  b.sizes.capacity = 201;
  b.sizes.bt_width = 4;
  b.sizes.bt_stride = 5;
  for (bool shared_mapping : {false, true}) {
    const SwaOut o = RunEmulated(b, shared_mapping);
    auto cell = [&](int32_t t, int32_t j) { return o.indices[static_cast<size_t>(t) * 128 + j]; };
    EXPECT_EQ(o.lens[0], 1);
    EXPECT_EQ(cell(0, 0), 11 * 64);
    EXPECT_EQ(cell(0, 1), -1);
    EXPECT_EQ(o.lens[63], 64);
    EXPECT_EQ(cell(63, 63), 11 * 64 + 63);
    EXPECT_EQ(cell(63, 64), -1);
    EXPECT_EQ(o.lens[64], 65);
    EXPECT_EQ(cell(64, 64), 22 * 64);
    EXPECT_EQ(o.lens[126], 127);  // still shorter than the window
    EXPECT_EQ(cell(126, 126), 22 * 64 + 62);
    EXPECT_EQ(cell(126, 127), -1);
    EXPECT_EQ(o.lens[127], 128);
    EXPECT_EQ(cell(127, 127), 22 * 64 + 63);
    EXPECT_EQ(o.lens[128], 128);  // window [1, 128]
    EXPECT_EQ(cell(128, 0), 11 * 64 + 1);
    EXPECT_EQ(cell(128, 127), 33 * 64);
    EXPECT_EQ(o.lens[199], 128);  // window [72, 199] spans blocks 1..3
    EXPECT_EQ(cell(199, 0), 22 * 64 + 8);
    EXPECT_EQ(cell(199, 56), 33 * 64);
    EXPECT_EQ(cell(199, 127), 44 * 64 + 7);
    EXPECT_EQ(o.lens[200], 0);  // graph padding token
    for (int32_t j = 0; j < 128; ++j) EXPECT_EQ(cell(200, j), -1) << j;
  }
}

// A decode token deep into its context: full window, the prefix positions shift it.
TEST(SwaBuilderByHand, DecodeTokenWithLongPrefix) {
  TestBatch b;
  b.qsl = {0, 1, 1};  // request 1 is a zero-length padding request
  b.seq_lens = {301, 0};
  b.block_table = {5, 6, 7, 8, 9, 0, 0, 0, 0, 0};
  b.slot_mapping = {7, -1};
  b.sizes.num_reqs = 2;
  b.sizes.num_tokens = 2;
  b.sizes.capacity = 2;
  b.sizes.bt_width = 5;
  b.sizes.bt_stride = 5;
  const SwaOut o = RunEmulated(b, false);
  EXPECT_EQ(o.lens[0], 128);  // pos 300, window [173, 300]
  EXPECT_EQ(o.indices[0], 7 * 64 + 45);
  EXPECT_EQ(o.indices[19], 8 * 64);
  EXPECT_EQ(o.indices[83], 9 * 64);
  EXPECT_EQ(o.indices[127], 9 * 64 + 44);
  EXPECT_EQ(o.lens[1], 0);
  EXPECT_EQ(o.indices[128], -1);
  EXPECT_EQ(o.indices[255], -1);
}

// vLLM's _compute_swa_indices_and_lens_kernel reads is_valid_token = slot_mapping >= 0: a real
// token whose slot is -1 gets length 0 and a cleared row (over poison: the kernel writes the -1s),
// in the decode launch and the prefill launch (token_offset) alike; its neighbours are untouched.
TEST(SwaBuilderByHand, InvalidSlotGivesLengthZeroAndAClearedRow) {
  TestBatch b;
  b.qsl = {0, 1, 41};  // a decode request, then a prefill of 40 tokens
  b.seq_lens = {301, 140};
  b.block_table = {5, 6, 7, 8, 9, 1, 2, 3, 0, 0};
  b.slot_mapping.assign(41, 0);
  b.sizes.num_reqs = 2;
  b.sizes.num_tokens = 41;
  b.sizes.capacity = 41;
  b.sizes.num_decodes = 1;
  b.sizes.num_decode_tokens = 1;
  b.sizes.bt_width = 5;
  b.sizes.bt_stride = 5;
  const ModelConsts m;
  for (int32_t invalid : {0, 1, 17, 40}) {
    SCOPED_TRACE(testing::Message() << "invalid token " << invalid);
    TestBatch x = b;
    x.slot_mapping[invalid] = -1;
    const ref::SwaMetadata want = ref::Swa(x.sizes, x.device(), m.swa_window, m.swa_block_size);
    EXPECT_EQ(want.lens[invalid], 0);
    for (int32_t j = 0; j < m.swa_window; ++j) ASSERT_EQ(want.indices[invalid * m.swa_window + j], -1) << j;
    // The neighbours keep their windows: token 0 sees [173, 300], token 17 of the prefill [0, 116].
    if (invalid != 0) EXPECT_EQ(want.lens[0], 128);
    if (invalid != 17) EXPECT_EQ(want.lens[17], 117);
    for (bool shared_mapping : {false, true}) {
      // The decode rows, then the prefill rows with token_offset = N_d, as vLLM's two launches.
      SwaOut o{std::vector<int32_t>(41, kPoison), std::vector<int32_t>(41 * 128, kPoison)};
      std::vector<int32_t> mapping(42, kPoison);
      if (shared_mapping) EmulateTokenMap({x.qsl.data(), mapping.data(), 2, 41});
      SwaParams p = MakeSwaParams(x.sizes, x.device(), m, shared_mapping ? mapping.data() : nullptr, o.lens.data(),
                                  o.indices.data());
      p.num_tokens = 1;
      EmulateSwa(p);
      p.token_offset = 1;
      p.num_tokens = 40;
      EmulateSwa(p);
      EXPECT_EQ(o.lens, want.lens);
      EXPECT_EQ(o.indices, want.indices);
    }
  }
}

TEST(SwaBuilderContract, RejectsBadParams) {
  int32_t cell = 0;
  SwaParams p{&cell, &cell, &cell, nullptr, &cell, &cell, 0, 0, 1, 128, 64};
  EXPECT_TRUE(CanImplementSwa(p).ok());
  SwaParams no_out = p;
  no_out.swa_indices = nullptr;
  EXPECT_EQ(CanImplementSwa(no_out).code(), absl::StatusCode::kInvalidArgument);
  SwaParams zero_window = p;
  zero_window.window = 0;
  EXPECT_EQ(CanImplementSwa(zero_window).code(), absl::StatusCode::kInvalidArgument);
  SwaParams negative_tokens = p;
  negative_tokens.num_tokens = -1;
  EXPECT_EQ(CanImplementSwa(negative_tokens).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dspark
