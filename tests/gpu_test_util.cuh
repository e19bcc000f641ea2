// Shared helpers for GPU tests: they skip, saying why, where no CUDA device is present.
#pragma once

#include <gtest/gtest.h>

#include "kernels/common/device_buffer.cuh"

#define DS_REQUIRE_GPU()                                                                  \
  do {                                                                                    \
    if (!::dspark::CudaDevicePresent())                                                   \
      GTEST_SKIP() << "no CUDA device present: this GPU test runs on the H200 machine; "  \
                      "the CPU emulation tests cover the same kernel bodies";             \
  } while (0)
