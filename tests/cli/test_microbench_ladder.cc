// microbench's latency ladder (sim/cli/microbench_ladder.cuh): the probe kernel's body, run by
// the CPU emulation of its grid, stores what its check expects, and the check's expectation is
// the chain it names (literal cells below). On the GPU, microbench checks every ladder row the
// same way after timing it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/common/grid.h"
#include "sim/cli/microbench_ladder.cuh"

namespace dspark::microbench_internal {
namespace {

struct LadderCase {
  std::vector<int32_t> qsl{0, 6, 7, 13, 15, 16};  // 5 requests, uneven (the adaptive shape)
  std::vector<int32_t> bt;                       // [5, 7]
  std::vector<int32_t> out;
  LadderCase() {
    for (int32_t i = 0; i < 5 * 7; ++i) bt.push_back(1000 + 13 * i);
  }
  LadderParams Params(int32_t depth, bool guess, int32_t cells) {
    out.assign(static_cast<size_t>(cells), -7);
    return LadderParams{qsl.data(), bt.data(), out.data(), 5, /*width=*/6, /*stride=*/7, depth, guess ? 1 : 0};
  }
};

TEST(MicrobenchLadder, EveryDepthStoresItsChainInEveryCell) {
  for (int32_t depth = 0; depth <= 2; ++depth)
    for (bool guess : {false, true}) {
      if (guess && depth != 2) continue;
      LadderCase c;
      const LaunchShape shape{3, 32};
      const LadderParams p = c.Params(depth, guess, shape.grid * shape.block);
      EmulateGrid(LadderKernel{p}, shape);
      for (int64_t i = 0; i < shape.grid * shape.block; ++i)
        ASSERT_EQ(c.out[static_cast<size_t>(i)], LadderExpected(p, c.qsl.data(), c.bt.data(), i))
            << "depth " << depth << " guess " << guess << " cell " << i;
    }
}

TEST(MicrobenchLadder, ExpectationIsTheNamedChain) {
  LadderCase c;
  // Cell 9: j = 9 % 6 = 3, col = 9 % 6 = 3; qsl[3] = 13 -> row min(13, 4) = 4.
  EXPECT_EQ(LadderExpected(c.Params(0, false, 1), c.qsl.data(), c.bt.data(), 9), 9);
  EXPECT_EQ(LadderExpected(c.Params(1, false, 1), c.qsl.data(), c.bt.data(), 9), 13);
  EXPECT_EQ(LadderExpected(c.Params(2, false, 1), c.qsl.data(), c.bt.data(), 9), 1000 + 13 * (4 * 7 + 3));
  // Cell 1: j = 1, col = 1; qsl[1] = 6 -> row 4; the guess (row 1) misses and is not used.
  EXPECT_EQ(LadderExpected(c.Params(2, true, 1), c.qsl.data(), c.bt.data(), 1), 1000 + 13 * (4 * 7 + 1));
  // Cell 0: qsl[0] = 0 -> row 0, col 0.
  EXPECT_EQ(LadderExpected(c.Params(2, true, 1), c.qsl.data(), c.bt.data(), 0), 1000);
}

}  // namespace
}  // namespace dspark::microbench_internal
