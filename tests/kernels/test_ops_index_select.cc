// PyTorch's small-index index_select (ops::IndexSelectSmallKernel: every thread walks all the
// indices) gives the same buffers as the one-thread-per-element kernels it stands beside, on 1-D
// and row-strided 2-D sources, with out-of-range indices read as zeros.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/common/grid.h"
#include "kernels/ops.cuh"

namespace dspark {
namespace {

TEST(IndexSelectSmall, OneDimensionalEqualsGather) {
  std::mt19937_64 rng(3);
  for (int iter = 0; iter < 200; ++iter) {
    const int32_t src_len = 1 + static_cast<int32_t>(rng() % 40);
    const int32_t n = static_cast<int32_t>(rng() % (ops::IndexSelectSmallKernel::kMaxIndices + 1));
    std::vector<int32_t> src(src_len), index(n);
    for (int32_t& v : src) v = static_cast<int32_t>(rng() % 100000) - 50;
    for (int32_t& v : index) v = static_cast<int32_t>(rng() % (src_len + 4)) - 2;  // some out of range
    std::vector<int32_t> want(n + 3, -9), got(n + 3, -9);
    const ops::GatherKernel g{src.data(), src_len, index.data(), want.data(), n};
    EmulateGrid(g, g.Shape());
    const ops::IndexSelectSmallKernel k{{src.data(), src_len, 1, index.data(), got.data(), 1, n, 1}};
    EmulateGrid(k, k.Shape());
    ASSERT_EQ(got, want) << "iteration " << iter;
  }
}

TEST(IndexSelectSmall, RowsEqualGatherRows) {
  std::mt19937_64 rng(4);
  for (int iter = 0; iter < 100; ++iter) {
    const int32_t src_rows = 1 + static_cast<int32_t>(rng() % 20);
    const int32_t cols = 1 + static_cast<int32_t>(rng() % 300);  // past one 128-thread block
    const int32_t src_stride = cols + static_cast<int32_t>(rng() % 5);
    const int32_t dst_stride = cols + static_cast<int32_t>(rng() % 7);
    const int32_t rows = 1 + static_cast<int32_t>(rng() % ops::IndexSelectSmallKernel::kMaxIndices);
    std::vector<int32_t> src(static_cast<size_t>(src_rows) * src_stride), index(rows);
    for (int32_t& v : src) v = static_cast<int32_t>(rng() % 1000000);
    for (int32_t& v : index) v = static_cast<int32_t>(rng() % (src_rows + 2)) - 1;
    std::vector<int32_t> want(static_cast<size_t>(rows) * dst_stride, -9), got = want;
    const ops::GatherRowsKernel g{src.data(), src_rows, src_stride, index.data(), want.data(), dst_stride, rows, cols};
    EmulateGrid(g, g.Shape());
    const ops::IndexSelectSmallKernel k{{src.data(), src_rows, src_stride, index.data(), got.data(), dst_stride, rows, cols}};
    EmulateGrid(k, k.Shape());
    ASSERT_EQ(got, want) << "iteration " << iter;
    // The CPU paths (row loops) against the per-thread emulation of both kernels.
    std::vector<int32_t> small_threads(want.size(), -9), rows_threads(want.size(), -9);
    const ops::IndexSelectSmallKernel kt{{src.data(), src_rows, src_stride, index.data(), small_threads.data(),
                                          dst_stride, rows, cols}};
    EmulateGridPerThread(kt, kt.Shape());
    const ops::GatherRowsKernel gt{src.data(), src_rows, src_stride, index.data(), rows_threads.data(), dst_stride,
                                   rows, cols};
    EmulateGridPerThread(gt, gt.Shape());
    ASSERT_EQ(small_threads, want) << "iteration " << iter;
    ASSERT_EQ(rows_threads, want) << "iteration " << iter;
  }
}

// PyTorch's launch shape for the small-index kernel: one selected slice spread over blocks of at
// most 128 threads; nothing launched for an empty selection.
TEST(IndexSelectSmall, LaunchShapeFollowsPyTorch) {
  const auto shape = [](int32_t rows, int32_t cols) {
    return ops::IndexSelectSmallKernel{{nullptr, 1, 1, nullptr, nullptr, 1, rows, cols}}.Shape();
  };
  EXPECT_EQ(shape(16, 1).grid, 1);
  EXPECT_EQ(shape(16, 1).block, 1);
  EXPECT_EQ(shape(16, 256).grid, 2);
  EXPECT_EQ(shape(16, 256).block, 128);
  EXPECT_EQ(shape(3, 100).block, 100);
  EXPECT_EQ(shape(0, 100).grid, 0);
}

}  // namespace
}  // namespace dspark
