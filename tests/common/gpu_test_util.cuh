// Shared helpers for GPU tests: they skip, saying why, where no CUDA device is present.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "absl/status/status.h"
#include "kernels/common/backend_gpu.cuh"
#include "kernels/common/device_buffer.cuh"

#define DS_REQUIRE_GPU()                                                                  \
  do {                                                                                    \
    if (!::dspark::CudaDevicePresent())                                                   \
      GTEST_SKIP() << "no CUDA device present: this GPU test runs on the H200 machine; "  \
                      "the CPU emulation tests cover the same kernel bodies";             \
  } while (0)

namespace dspark {

// A non-default stream with a backend's scratch arena and pinned staging.
struct GpuEnv {
  CudaStream stream;
  DeviceBuffer<uint8_t> scratch{size_t{16} << 20};
  PinnedBuffer<uint8_t> staging{size_t{4} << 20};
  GpuBackend Backend() {
    return GpuBackend(stream.get(), scratch.get(), scratch.size(), staging.get(), staging.size());
  }
  void Sync() { CUDA_CHECK(cudaStreamSynchronize(stream.get())); }
};

// Runs `issue` (which issues one step's operations through `be`) eagerly once, waits, and
// rewinds the scratch arena and staging so the capture that follows reuses the same addresses.
// vLLM warms up before it captures, too. It matters to compute-sanitizer initcheck: on the
// first replay of a freshly captured chain with zero-length requests, initcheck flags the
// memcpy node's whole source as uninitialized although the kernel node before it wrote every
// byte (the copy delivers exactly the gather's values); the same operations run eagerly are
// clean. tools/initcheck_probe.cu isolates it; kernels/PERF_NOTES.md has the runs.
template <class Issue>
void WarmUpBeforeCapture(GpuEnv& env, GpuBackend& be, Issue&& issue) {
  const absl::Status s = std::forward<Issue>(issue)();
  EXPECT_TRUE(s.ok()) << "warm-up: " << s;
  env.Sync();
  be.ResetScratch();
  be.ResetStaging();
}

}  // namespace dspark
