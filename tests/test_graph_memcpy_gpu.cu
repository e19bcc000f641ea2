// Evidence for the compute-sanitizer initcheck report on graph replays: a captured graph whose
// kernel node writes a buffer and whose memcpy node then copies it. The copy is checked for
// exactness here; scripts/gpu-run.sh runs initcheck over this test, so the log shows whether
// the tool flags a memcpy node whose source a preceding kernel node fully wrote.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/common/grid.h"
#include "tests/gpu_test_util.cuh"

namespace dspark {
namespace {

struct IotaKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  int32_t* out;  // [n]
  int32_t n;     // [elements]
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = c.block * c.block_dim + c.thread;
    if (i < n) out[i] = 3 * i + 1;
  }
};

class GraphMemcpyGpu : public ::testing::TestWithParam<int32_t> {};

// Sizes whose byte counts are and are not multiples of a 32-byte sector.
INSTANTIATE_TEST_SUITE_P(Sizes, GraphMemcpyGpu, ::testing::Values(1000, 1001, 261, 7));

TEST_P(GraphMemcpyGpu, KernelNodeThenMemcpyNodeCopiesWhatTheKernelWrote) {
  DS_REQUIRE_GPU();
  const int32_t n = GetParam();
  DeviceBuffer<int32_t> src(n), dst(n);
  CudaStream stream;
  CudaGraph graph;
  graph.BeginCapture(stream.get());
  CUDA_CHECK(LaunchFunctor(IotaKernel{src.get(), n}, {CeilDiv(n, 256), 256}, stream.get()));
  CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), n * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream.get()));
  graph.EndCapture(stream.get());
  EXPECT_EQ(graph.NodeCount(), 2u);
  graph.Replay(stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  const std::vector<int32_t> got = dst.Download();
  for (int32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 3 * i + 1) << "at " << i;
}

}  // namespace
}  // namespace dspark
