// Paged KV block manager: null block, deterministic ids, all-or-nothing growth, leak checks.
#include <gtest/gtest.h>

#include <vector>

#include "sim/model/kv_cache.h"

namespace dspark::sim {
namespace {

TEST(KvCache, HandsOutBlocksFromOneAndNeverTheNullBlock) {
  KvCache kv(5, 64);
  EXPECT_EQ(kv.num_free(), 4);
  std::vector<int32_t> a;
  ASSERT_TRUE(kv.Grow(a, 1));
  ASSERT_TRUE(kv.Grow(a, 64));  // still one block
  EXPECT_EQ(a, (std::vector<int32_t>{1}));
  ASSERT_TRUE(kv.Grow(a, 65));
  EXPECT_EQ(a, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(kv.BlocksFor(0), 0);
  EXPECT_EQ(kv.BlocksFor(129), 3);
  EXPECT_EQ(kv.num_used(), 2);
}

TEST(KvCache, GrowIsAllOrNothing) {
  KvCache kv(4, 16);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(kv.Grow(a, 32));
  EXPECT_FALSE(kv.Grow(b, 33));  // needs 3, 1 free
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(kv.num_free(), 1);
  EXPECT_TRUE(kv.Grow(b, 16));
}

TEST(KvCache, ReleasedBlocksAreReusedFirstInTheSameOrder) {
  KvCache kv(10, 8);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(kv.Grow(a, 24));  // 1 2 3
  ASSERT_TRUE(kv.Grow(b, 8));   // 4
  kv.Release(a);
  EXPECT_TRUE(a.empty());
  std::vector<int32_t> c;
  ASSERT_TRUE(kv.Grow(c, 32));
  EXPECT_EQ(c, (std::vector<int32_t>{1, 2, 3, 5}));
}

TEST(KvCache, ConsistencyCheckFindsLeaksAndDoubleOwnership) {
  KvCache kv(6, 8);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(kv.Grow(a, 16));
  ASSERT_TRUE(kv.Grow(b, 8));
  EXPECT_TRUE(kv.CheckConsistency({&a, &b}).ok());
  EXPECT_EQ(kv.CheckConsistency({&a}).code(), absl::StatusCode::kInternal);  // b's block leaked
  std::vector<int32_t> forged = {a[0]};
  EXPECT_EQ(kv.CheckConsistency({&a, &b, &forged}).code(), absl::StatusCode::kInternal);
  std::vector<int32_t> null_block = {0};
  EXPECT_EQ(kv.CheckConsistency({&a, &b, &null_block}).code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace dspark::sim
