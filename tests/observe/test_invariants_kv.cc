// sim/observe/invariants on the KV pool: a partition of the blocks passes, and every leaked,
// doubly owned or out-of-range block, and too many running requests, fail with the exact message.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/observe/invariants.h"
#include "tests/observe/invariant_fixtures.h"

namespace dspark::sim {
namespace {

using invariant_test::KvState;
using invariant_test::SmallConfig;

TEST(InvariantKv, APartitionPasses) {
  InvariantChecker checker(SmallConfig());
  KvState kv;
  EXPECT_TRUE(checker.CheckKv(3, kv.View()).ok());
  kv.a.clear();  // released blocks back on the free list
  kv.free = {7, 6, 5, 2, 1};
  EXPECT_TRUE(checker.CheckKv(4, kv.View()).ok());
}

struct BrokenKv {
  std::string name;
  std::function<void(KvState&)> mutate;
  std::string message;
};

void PrintTo(const BrokenKv& b, std::ostream* os) { *os << b.name; }

class InvariantKvFails : public ::testing::TestWithParam<BrokenKv> {};

TEST_P(InvariantKvFails, WithTheExactMessage) {
  InvariantChecker checker(SmallConfig());
  KvState kv;
  ASSERT_TRUE(checker.CheckKv(2, kv.View()).ok());  // the scratch from a good check must not hide a bad one
  GetParam().mutate(kv);
  const absl::Status s = checker.CheckKv(3, kv.View());
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(std::string(s.message()), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, InvariantKvFails,
    ::testing::Values(
        BrokenKv{"leaked_block", [](KvState& kv) { kv.free = {7, 6}; },
                 "invariant violated at step 3: kv: free 2 + held by running requests 4 = 6 blocks, the pool has 7 "
                 "usable (1..7); block 5 is neither free nor held (leaked)"},
        BrokenKv{"finished_request_keeps_its_blocks",  // request 10 left the running list holding 1, 2
                 [](KvState& kv) { kv.a.clear(); },
                 "invariant violated at step 3: kv: free 3 + held by running requests 2 = 5 blocks, the pool has 7 "
                 "usable (1..7); block 1 is neither free nor held (leaked)"},
        BrokenKv{"block_owned_twice", [](KvState& kv) { kv.b = {3, 2}; kv.free = {7, 6, 5, 4}; },
                 "invariant violated at step 3: kv: block 2 owned by two requests (ids 10 and 11)"},
        BrokenKv{"held_and_free", [](KvState& kv) { kv.b = {3, 4, 5}; },
                 "invariant violated at step 3: kv: block 5 is held by request id 11 and also on the free list"},
        BrokenKv{"twice_on_the_free_list", [](KvState& kv) { kv.free = {7, 6, 5, 6}; },
                 "invariant violated at step 3: kv: block 6 is twice on the free list"},
        BrokenKv{"null_block_handed_out", [](KvState& kv) { kv.a = {0, 1, 2}; },
                 "invariant violated at step 3: kv: request id 10 holds block 0, outside the usable blocks 1..7"},
        BrokenKv{"null_block_on_the_free_list", [](KvState& kv) { kv.free = {7, 6, 5, 0}; },
                 "invariant violated at step 3: kv: free list holds block 0, outside the usable blocks 1..7"},
        BrokenKv{"block_past_the_pool", [](KvState& kv) { kv.b = {3, 4, 8}; },
                 "invariant violated at step 3: kv: request id 11 holds block 8, outside the usable blocks 1..7"}),
    [](const ::testing::TestParamInfo<BrokenKv>& info) { return info.param.name; });

TEST(InvariantKv, TooManyRunningRequests) {
  SchedulerConfig c = SmallConfig();
  c.max_num_seqs = 1;
  InvariantChecker checker(c);
  KvState kv;
  EXPECT_EQ(checker.CheckKv(5, kv.View()).message(),
            "invariant violated at step 5: running requests = 2 > max_num_seqs = 1");
}

}  // namespace
}  // namespace dspark::sim
