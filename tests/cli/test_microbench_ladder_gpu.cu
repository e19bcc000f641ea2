// microbench's latency ladder on the GPU (sim/cli/microbench_ladder.cuh): every depth, guessed
// or not, in one block and in a grid of many, stores exactly what its check expects, on the
// batch-16 decode boundaries (where the guess hits) and on uneven ones (where it misses).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/common/device_buffer.cuh"
#include "kernels/common/grid.h"
#include "sim/cli/microbench_ladder.cuh"
#include "tests/common/gpu_test_util.cuh"

namespace dspark::microbench_internal {
namespace {

TEST(MicrobenchLadderGpu, EveryRowStoresItsChain) {
  DS_REQUIRE_GPU();
  const int32_t R = 16, W = 128, stride = 130;
  std::vector<int32_t> bt(static_cast<size_t>(R) * stride);
  for (size_t i = 0; i < bt.size(); ++i) bt[i] = 1 + static_cast<int32_t>((i * 2654435761u) % 200000);
  std::vector<int32_t> decode(R + 1), uneven = {0, 6, 7, 13, 15, 21, 24, 25, 31, 35, 37, 43, 48, 49, 55, 59, 64};
  for (int32_t r = 0; r <= R; ++r) decode[r] = r;
  DeviceBuffer<int32_t> d_bt(bt);
  for (const auto& qsl : {decode, uneven}) {
    DeviceBuffer<int32_t> d_qsl(qsl);
    for (const LaunchShape shape : {LaunchShape{1, 128}, LaunchShape{64, 256}})
      for (int32_t depth = 0; depth <= 2; ++depth)
        for (int guess = 0; guess <= (depth == 2 ? 1 : 0); ++guess) {
          const int64_t cells = int64_t{shape.grid} * shape.block;
          DeviceBuffer<int32_t> out(static_cast<size_t>(cells));
          out.FillBytes(0xff);
          const LadderParams p{d_qsl.get(), d_bt.get(), out.get(), R, W, stride, depth, guess};
          ASSERT_EQ(LaunchFunctor(LadderKernel{p}, shape, nullptr), cudaSuccess);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          const std::vector<int32_t> got = out.Download();
          int64_t wrong = 0;
          for (int64_t i = 0; i < cells; ++i) wrong += got[static_cast<size_t>(i)] != LadderExpected(p, qsl.data(), bt.data(), i);
          EXPECT_EQ(wrong, 0) << "depth " << depth << " guess " << guess << " grid " << shape.grid;
        }
  }
}

}  // namespace
}  // namespace dspark::microbench_internal
