// The persistent GpuSuite buffers the GPU suite and region-check tests allocate: room for every
// randomized seed case of tests/kernels/test_suite_util.h (batches up to 37 requests of at most
// 2,048 tokens, strided and widened block tables) with headroom.
#pragma once

#include "kernels/suite/gpu_suite.cuh"

namespace dspark::suite_test {

inline GpuSuiteCapacity TestCapacity() {
  GpuSuiteCapacity c;
  c.max_tokens = 4096;
  c.max_reqs = 64;
  c.max_bt_stride = 1700;
  return c;
}

}  // namespace dspark::suite_test
