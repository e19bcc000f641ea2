#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "kernels/compressed_slots.cuh"
#include "kernels/reference/compressed_slots.h"
#include "kernels/token_map.cuh"
#include "tests/kernels/builder_test_util.h"

namespace dspark {
namespace {

using testing_util::BatchSpec;
using testing_util::BuildBatch;
using testing_util::TestBatch;

constexpr int64_t kPoison = -99;
constexpr int32_t kCellsPastCapacity = 3;  // must stay untouched

// Runs the fused kernel body under the grid emulator into a poisoned buffer of capacity + 3.
std::vector<int64_t> RunEmulated(const TestBatch& b, int32_t ratio, bool shared_mapping) {
  std::vector<int64_t> out(b.sizes.capacity + kCellsPastCapacity, kPoison);
  std::vector<int32_t> mapping(b.sizes.num_tokens + 1, -99);
  if (shared_mapping) EmulateTokenMap({b.qsl.data(), mapping.data(), b.sizes.num_reqs, b.sizes.num_tokens});
  const CompressedSlotParams p = MakeCompressedSlotParams(b.sizes, b.device(), ModelConsts{}, ratio,
                                                          shared_mapping ? mapping.data() : nullptr, out.data());
  EXPECT_TRUE(CanImplementCompressedSlots(p).ok()) << CanImplementCompressedSlots(p);
  EmulateCompressedSlots(p);
  return out;
}

class CompressedSlots : public ::testing::TestWithParam<std::tuple<BatchSpec, int32_t, bool>> {};

TEST_P(CompressedSlots, EmulatedMatchesReference) {
  const auto& [spec, ratio, shared_mapping] = GetParam();
  const TestBatch b = BuildBatch(spec);
  const std::vector<int64_t> got = RunEmulated(b, ratio, shared_mapping);
  const std::vector<int64_t> want = ref::CompressedSlots(b.sizes, b.device(), ratio, ModelConsts{}.mla_block_size);
  EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + b.sizes.capacity), want);
  for (int32_t i = 0; i < kCellsPastCapacity; ++i) EXPECT_EQ(got[b.sizes.capacity + i], kPoison);
}

// Properties from the definition, checked token by token without the reference.
TEST_P(CompressedSlots, ValidityAndSlotsFollowTheDefinition) {
  const auto& [spec, ratio, shared_mapping] = GetParam();
  const TestBatch b = BuildBatch(spec);
  const std::vector<int64_t> got = RunEmulated(b, ratio, shared_mapping);
  const int32_t m = b.real_tokens();
  for (int32_t t = m; t < b.sizes.capacity; ++t) ASSERT_EQ(got[t], -1) << "tail token " << t;
  for (int32_t t = 0; t < m; ++t) {
    const int32_t pos = b.PosOf(t);
    if (b.slot_mapping[t] == -1) {
      ASSERT_EQ(got[t], -1) << "token " << t << " has no ordinary slot";
    } else if (ratio == 1) {
      // The builder's test batches store token t at bt[r, pos / 64] * 64 + pos % 64, which is
      // exactly the ratio-1 compressed slot.
      ASSERT_EQ(got[t], b.slot_mapping[t]) << "token " << t;
    } else if (pos % 2 == 0) {
      ASSERT_EQ(got[t], -1) << "token " << t << " at even position " << pos;
    } else {
      const int64_t blk = b.block_table[static_cast<size_t>(b.ReqOf(t)) * b.sizes.bt_stride + pos / 64];
      ASSERT_EQ(got[t], blk * 32 + (pos / 2) % 32) << "token " << t << " at odd position " << pos;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Batches, CompressedSlots,
    ::testing::Combine(::testing::ValuesIn(testing_util::TokenBuilderSpecs()), ::testing::Values(1, 2),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<BatchSpec, int32_t, bool>>& info) {
      return std::get<0>(info.param).name + "_ratio" + std::to_string(std::get<1>(info.param)) +
             (std::get<2>(info.param) ? "_shared_mapping" : "_searched");
    });

// Two requests worked out by hand; request 1 has a negative block id, which vLLM clamps to 0.
TEST(CompressedSlotsByHand, Ratio2OddPositionsAndClamp) {
  TestBatch b;
  b.qsl = {0, 3, 5};
  b.seq_lens = {66, 2};  // request 0: positions 63, 64, 65; request 1: positions 0, 1
  b.block_table = {4, 9, testing_util::kUnreadBlockCell, -3, 0, testing_util::kUnreadBlockCell};
  b.slot_mapping = {4 * 64 + 63, -1, 9 * 64 + 1, 5, 6, -1};
  b.sizes.num_reqs = 2;
  b.sizes.num_tokens = 6;
  b.sizes.capacity = 8;
  b.sizes.bt_width = 2;
  b.sizes.bt_stride = 3;
  for (bool shared_mapping : {false, true}) {
    const std::vector<int64_t> r2 = RunEmulated(b, 2, shared_mapping);
    EXPECT_EQ(r2[0], 4 * 32 + 31);  // pos 63: cp 31, block column 0
    EXPECT_EQ(r2[1], -1);           // pos 64 is even
    EXPECT_EQ(r2[2], 9 * 32 + 0);   // pos 65: cp 32, block column 1
    EXPECT_EQ(r2[3], -1);           // pos 0 is even
    EXPECT_EQ(r2[4], 0 * 32 + 0);   // pos 1: cp 0, block -3 clamped to 0
    EXPECT_EQ(r2[5], -1);
    EXPECT_EQ(r2[6], -1);
    EXPECT_EQ(r2[7], -1);
    const std::vector<int64_t> r1 = RunEmulated(b, 1, shared_mapping);
    EXPECT_EQ(r1[0], 4 * 64 + 63);
    EXPECT_EQ(r1[1], -1);  // slot_mapping -1
    EXPECT_EQ(r1[2], 9 * 64 + 1);
    EXPECT_EQ(r1[3], 0);  // pos 0, block -3 clamped to 0
    EXPECT_EQ(r1[4], 1);
    EXPECT_EQ(r1[5], -1);
  }
}

TEST(CompressedSlotsContract, RejectsBadParams) {
  int32_t cell = 0;
  int64_t wide = 0;
  CompressedSlotParams p{&cell, &cell, &cell, &wide, nullptr, &wide, 0, 0, 1, 2, 64};
  EXPECT_TRUE(CanImplementCompressedSlots(p).ok());
  CompressedSlotParams ratio3 = p;  // V4.1's 1 and 2, DeepSeek-V4's 4 and 128 only
  ratio3.ratio = 3;
  EXPECT_EQ(CanImplementCompressedSlots(ratio3).code(), absl::StatusCode::kInvalidArgument);
  CompressedSlotParams ratio4 = p;
  ratio4.ratio = 4;
  EXPECT_TRUE(CanImplementCompressedSlots(ratio4).ok());
  CompressedSlotParams odd_block = p;
  odd_block.block_size = 63;
  EXPECT_EQ(CanImplementCompressedSlots(odd_block).code(), absl::StatusCode::kInvalidArgument);
  CompressedSlotParams no_slots = p;
  no_slots.slot_mapping = nullptr;
  EXPECT_EQ(CanImplementCompressedSlots(no_slots).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dspark
