#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kernels/reference/token_map.h"
#include "kernels/token_map.cuh"
#include "tests/gpu_test_util.cuh"

namespace dspark {
namespace {

TEST(TokenMapGpu, FusedMatchesReferenceOnSeedCase) {
  DS_REQUIRE_GPU();
  const std::vector<int32_t> qsl{0, 0, 257, 258, 258, 261};
  const int32_t n = 261 + 7;
  DeviceBuffer<int32_t> d_qsl(qsl), d_out(n);
  d_out.FillBytes(0xff);
  CUDA_CHECK(LaunchTokenMap({d_qsl.get(), d_out.get(), 5, n}, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(d_out.Download(), ref::TokenToReq(qsl.data(), 5, n));
}

}  // namespace
}  // namespace dspark
