#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "kernels/reference/ring_slots.h"
#include "kernels/ring_slots.cuh"
#include "kernels/token_map.cuh"
#include "tests/kernels/builder_test_util.h"

namespace dspark {
namespace {

using testing_util::BatchSpec;
using testing_util::BuildBatch;
using testing_util::TestBatch;

constexpr int64_t kPoison = -99;
constexpr int32_t kCellsPastCapacity = 3;  // must stay untouched

std::vector<int64_t> RunEmulated(const TestBatch& b, bool shared_mapping, const ModelConsts& m = {}) {
  std::vector<int64_t> out(b.sizes.capacity + kCellsPastCapacity, kPoison);
  std::vector<int32_t> mapping(b.sizes.num_tokens + 1, -99);
  if (shared_mapping) EmulateTokenMap({b.qsl.data(), mapping.data(), b.sizes.num_reqs, b.sizes.num_tokens});
  const RingSlotParams p =
      MakeRingSlotParams(b.sizes, b.device(), m, shared_mapping ? mapping.data() : nullptr, out.data());
  EXPECT_TRUE(CanImplementRingSlots(p).ok()) << CanImplementRingSlots(p);
  EmulateRingSlots(p);
  return out;
}

TEST(CompressorRingCapacity, FollowsDefinition) {
  EXPECT_EQ(CompressorRingCapacity(0), 8);
  EXPECT_EQ(CompressorRingCapacity(5), 8);   // the DSpark K: next_pow2(7) = 8
  EXPECT_EQ(CompressorRingCapacity(6), 8);
  EXPECT_EQ(CompressorRingCapacity(7), 16);  // next_pow2(9) = 16
  EXPECT_EQ(CompressorRingCapacity(14), 16);
  EXPECT_EQ(CompressorRingCapacity(15), 32);
}

class RingSlots : public ::testing::TestWithParam<std::tuple<BatchSpec, bool>> {};

TEST_P(RingSlots, EmulatedMatchesReference) {
  const auto& [spec, shared_mapping] = GetParam();
  const TestBatch b = BuildBatch(spec);
  const std::vector<int64_t> got = RunEmulated(b, shared_mapping);
  const std::vector<int64_t> want = ref::RingSlots(b.sizes, b.device(), CompressorRingCapacity(5));
  EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + b.sizes.capacity), want);
  for (int32_t i = 0; i < kCellsPastCapacity; ++i) EXPECT_EQ(got[b.sizes.capacity + i], kPoison);
}

// Properties from the definition, token by token, without the reference; also a larger K.
TEST_P(RingSlots, SlotsFollowTheDefinition) {
  const auto& [spec, shared_mapping] = GetParam();
  const TestBatch b = BuildBatch(spec);
  for (int32_t k : {5, 7}) {
    ModelConsts m;
    m.spec_k = k;
    const int64_t cap = CompressorRingCapacity(k);
    const std::vector<int64_t> got = RunEmulated(b, shared_mapping, m);
    const int32_t real = b.real_tokens();
    for (int32_t t = real; t < b.sizes.capacity; ++t) ASSERT_EQ(got[t], -1) << "unused position " << t;
    for (int32_t t = 0; t < real; ++t) {
      const int32_t first_block = b.block_table[static_cast<size_t>(b.ReqOf(t)) * b.sizes.bt_stride];
      if (first_block == 0) {
        ASSERT_EQ(got[t], -1) << "token " << t << ": null page";
      } else {
        ASSERT_EQ(got[t] / cap, first_block) << "token " << t;
        ASSERT_EQ(got[t] % cap, b.PosOf(t) % cap) << "token " << t;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Batches, RingSlots,
    ::testing::Combine(::testing::ValuesIn(testing_util::TokenBuilderSpecs()), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<BatchSpec, bool>>& info) {
      return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_shared_mapping" : "_searched");
    });

// Worked by hand with CAP = 8: request 0 owns block 3, request 1 the null page, request 2 block 1.
TEST(RingSlotsByHand, NullPageAndWrap) {
  TestBatch b;
  b.qsl = {0, 3, 4, 6, 6};  // request 3: zero-length padding
  b.seq_lens = {10, 4, 17, 0};
  b.block_table = {3, 50, 0, 51, 1, 52, 7, 53};
  b.slot_mapping.assign(7, -1);
  b.sizes.num_reqs = 4;
  b.sizes.num_tokens = 7;
  b.sizes.capacity = 9;
  b.sizes.bt_width = 2;
  b.sizes.bt_stride = 2;
  for (bool shared_mapping : {false, true}) {
    const std::vector<int64_t> got = RunEmulated(b, shared_mapping);
    // Request 0: positions 7, 8, 9 wrap around the ring of block 3.
    EXPECT_EQ(got[0], 3 * 8 + 7);
    EXPECT_EQ(got[1], 3 * 8 + 0);
    EXPECT_EQ(got[2], 3 * 8 + 1);
    EXPECT_EQ(got[3], -1);  // null page
    EXPECT_EQ(got[4], 1 * 8 + 15 % 8);
    EXPECT_EQ(got[5], 1 * 8 + 16 % 8);
    for (int32_t t = 6; t < 9; ++t) EXPECT_EQ(got[t], -1) << "unused position " << t;
  }
}

TEST(RingSlotsContract, RejectsBadParams) {
  int32_t cell = 0;
  int64_t wide = 0;
  RingSlotParams p{&cell, &cell, &cell, nullptr, &wide, 1, 1, 1, 8};
  EXPECT_TRUE(CanImplementRingSlots(p).ok());
  RingSlotParams zero_cap = p;
  zero_cap.ring_capacity = 0;
  EXPECT_EQ(CanImplementRingSlots(zero_cap).code(), absl::StatusCode::kInvalidArgument);
  RingSlotParams no_columns = p;
  no_columns.bt_stride = 0;
  EXPECT_EQ(CanImplementRingSlots(no_columns).code(), absl::StatusCode::kInvalidArgument);
  RingSlotParams no_table = p;
  no_table.block_table = nullptr;
  EXPECT_EQ(CanImplementRingSlots(no_table).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dspark
