// An investigation probe, not a regression test: what compute-sanitizer initcheck reports on the
// first replay of captured op chains (state (c)'s mapping chain, and a kernel then a copy at
// several arena offsets). Each case is meant to run alone in its own process under initcheck
// (scripts/gpu-sanitize.sh prints their error counts as evidence); run plainly, they only check
// that the copies are exact. Built as its own binary, dspark_initcheck_probe (CUDA builds with
// tests), so the regression suite (dspark_tests) holds none of it.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/common/backend_gpu.cuh"
#include "kernels/common/grid.h"
#include "kernels/ops.cuh"
#include "kernels/suite/vllm_ops.h"
#include "kernels/token_map_impls.h"
#include "tests/common/gpu_test_util.cuh"
#include "tests/kernels/metadata_cases.h"

namespace dspark {
namespace {

struct IotaProbeKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  int32_t* out;  // [n]
  int32_t n;     // [elements]
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = c.block * c.block_dim + c.thread;
    if (i < n) out[i] = 3 * i + 1;
  }
};

std::vector<int32_t> Lens(int variant) {
  switch (variant) {
    case 0: return {0, 257, 1, 0, 3};
    case 1: return {1, 257, 1, 1, 3};
    default: return std::vector<int32_t>(64, 6);
  }
}

// The device-chain mapping, captured or eager, on a fresh 16 MiB arena.
void RunChain(int variant, bool graph, bool warm_up, bool zero_arena) {
  const std::vector<int32_t> lens = Lens(variant);
  const std::vector<int32_t> qsl = testing_util::QslFromLens(lens);
  const int32_t R = static_cast<int32_t>(lens.size()), M = qsl.back(), N = M + 7;
  CudaStream stream;
  DeviceBuffer<uint8_t> scratch(size_t{16} << 20);
  PinnedBuffer<uint8_t> staging(size_t{1} << 20);
  if (zero_arena) scratch.FillBytes(0);
  DeviceBuffer<int32_t> d_qsl(qsl), out(static_cast<size_t>(N));
  out.FillBytes(0xff);
  CUDA_CHECK(cudaDeviceSynchronize());
  const TokenMapArgs a{d_qsl.get(), qsl.data(), R, N, out.get(), N};
  auto run = [&] {
    GpuBackend be(stream.get(), scratch.get(), scratch.size(), staging.get(), staging.size());
    ASSERT_TRUE(vllm_ops::TokenMapPre56562(be, a).ok());  // state (c)'s chain
  };
  if (warm_up) run();
  if (graph) {
    CudaGraph g;
    g.BeginCapture(stream.get());
    run();
    g.EndCapture(stream.get());
    g.Replay(stream.get());
  } else {
    run();
  }
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  const std::vector<int32_t> got = out.Download();
  for (int32_t t = 0; t < M; ++t) {
    int32_t r = 0;
    while (qsl[r + 1] <= t) ++r;
    ASSERT_EQ(got[t], r) << "t=" << t;
  }
}

TEST(InitcheckProbeGpu, ChainGraphZeroLens) { DS_REQUIRE_GPU(); RunChain(0, true, false, false); }
TEST(InitcheckProbeGpu, ChainGraphNoZeroLens) { DS_REQUIRE_GPU(); RunChain(1, true, false, false); }
TEST(InitcheckProbeGpu, ChainGraph6x64) { DS_REQUIRE_GPU(); RunChain(2, true, false, false); }
TEST(InitcheckProbeGpu, ChainEagerZeroLens) { DS_REQUIRE_GPU(); RunChain(0, false, false, false); }
TEST(InitcheckProbeGpu, ChainGraphAfterWarmUp) { DS_REQUIRE_GPU(); RunChain(0, true, true, false); }
TEST(InitcheckProbeGpu, ChainGraphZeroedArena) { DS_REQUIRE_GPU(); RunChain(0, true, false, true); }

// One kernel node then one memcpy node, the source at `offset` bytes into an allocation of
// `alloc` bytes.
void IotaThenCopy(size_t alloc, size_t offset, int32_t n, bool graph) {
  CudaStream stream;
  DeviceBuffer<uint8_t> arena(alloc);
  DeviceBuffer<int32_t> dst(static_cast<size_t>(n));
  int32_t* src = reinterpret_cast<int32_t*>(arena.get() + offset);
  auto issue = [&] {
    CUDA_CHECK(LaunchFunctor(IotaProbeKernel{src, n}, {CeilDiv(n, 256), 256}, stream.get()));
    CUDA_CHECK(cudaMemcpyAsync(dst.get(), src, n * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream.get()));
  };
  if (graph) {
    CudaGraph g;
    g.BeginCapture(stream.get());
    issue();
    g.EndCapture(stream.get());
    g.Replay(stream.get());
  } else {
    issue();
  }
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  const std::vector<int32_t> got = dst.Download();
  for (int32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 3 * i + 1) << "at " << i;
}

TEST(InitcheckProbeGpu, IotaGraphSmallAlloc) { DS_REQUIRE_GPU(); IotaThenCopy(1044, 0, 261, true); }
TEST(InitcheckProbeGpu, IotaGraphArenaOffset0) { DS_REQUIRE_GPU(); IotaThenCopy(size_t{16} << 20, 0, 261, true); }
TEST(InitcheckProbeGpu, IotaGraphArenaOffset2048) { DS_REQUIRE_GPU(); IotaThenCopy(size_t{16} << 20, 2048, 261, true); }
TEST(InitcheckProbeGpu, IotaEagerArenaOffset2048) { DS_REQUIRE_GPU(); IotaThenCopy(size_t{16} << 20, 2048, 261, false); }

// Five kernel nodes ahead of the copy, as in the chain, the last one writing the source.
void FiveKernelsThenCopy(size_t offset, int32_t n) {
  CudaStream stream;
  DeviceBuffer<uint8_t> arena(size_t{16} << 20);
  DeviceBuffer<int32_t> dst(static_cast<size_t>(n));
  int32_t* other = reinterpret_cast<int32_t*>(arena.get());
  int32_t* src = reinterpret_cast<int32_t*>(arena.get() + offset);
  CudaGraph g;
  g.BeginCapture(stream.get());
  for (int k = 0; k < 4; ++k) CUDA_CHECK(LaunchFunctor(IotaProbeKernel{other, 5}, {1, 256}, stream.get()));
  CUDA_CHECK(LaunchFunctor(IotaProbeKernel{src, n}, {CeilDiv(n, 256), 256}, stream.get()));
  CUDA_CHECK(cudaMemcpyAsync(dst.get(), src, n * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream.get()));
  g.EndCapture(stream.get());
  g.Replay(stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  const std::vector<int32_t> got = dst.Download();
  for (int32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 3 * i + 1) << "at " << i;
}

TEST(InitcheckProbeGpu, FiveKernelsGraphOffset2048) { DS_REQUIRE_GPU(); FiveKernelsThenCopy(2048, 261); }

}  // namespace
}  // namespace dspark
