#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kernels/reference/token_map.h"
#include "kernels/token_map.cuh"

namespace dspark {
namespace {

std::vector<int32_t> Qsl(const std::vector<int32_t>& lens) {
  std::vector<int32_t> q(lens.size() + 1, 0);
  std::partial_sum(lens.begin(), lens.end(), q.begin() + 1);
  return q;
}

class TokenMapSeed : public ::testing::TestWithParam<std::vector<int32_t>> {};

TEST_P(TokenMapSeed, EmulatedFusedMatchesReference) {
  const auto lens = GetParam();
  const auto qsl = Qsl(lens);
  const int32_t n = qsl.back() + 7;
  std::vector<int32_t> out(n, -99);
  EmulateTokenMap({qsl.data(), out.data(), static_cast<int32_t>(lens.size()), n});
  EXPECT_EQ(out, ref::TokenToReq(qsl.data(), static_cast<int32_t>(lens.size()), n));
}

INSTANTIATE_TEST_SUITE_P(Seeds, TokenMapSeed,
                         ::testing::Values(std::vector<int32_t>{1}, std::vector<int32_t>{0, 257, 1, 0, 3},
                                           std::vector<int32_t>(64, 6), std::vector<int32_t>{2, 6, 4, 0}));

}  // namespace
}  // namespace dspark
