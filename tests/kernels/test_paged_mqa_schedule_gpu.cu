// DeepGEMM's varlen scheduler metadata (kernels/paged_mqa_schedule.cuh) on the GPU against the
// reference written from DeepGEMM's semantics, on the batches the indexer hands it.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/common/device_buffer.cuh"
#include "kernels/common/grid.h"
#include "kernels/paged_mqa_schedule.cuh"
#include "kernels/reference/paged_mqa_schedule.h"
#include "tests/common/gpu_test_util.cuh"

namespace dspark {
namespace {

TEST(PagedMqaScheduleGpu, RandomBatchesEqualReference) {
  DS_REQUIRE_GPU();
  std::mt19937_64 rng(7);
  CudaStream stream;
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<int32_t> lens, indices;
    const int32_t reqs = static_cast<int32_t>(rng() % 300);
    for (int32_t r = 0; r < reqs; ++r) {
      const int32_t q = 1 + static_cast<int32_t>(rng() % 6);
      const int32_t base = static_cast<int32_t>(rng() % 140000);
      for (int32_t k = 0; k < q; ++k) {
        lens.push_back(base + k + 1);
        indices.push_back(r);
      }
    }
    for (int32_t k = 0; k < static_cast<int32_t>(rng() % 5); ++k) {
      lens.push_back(0);
      indices.push_back(reqs + k);
    }
    const int32_t n = static_cast<int32_t>(lens.size()), sms = 132;
    DeviceBuffer<int32_t> d_lens(std::vector<int32_t>(lens.begin(), lens.end()));
    DeviceBuffer<int32_t> d_idx(std::vector<int32_t>(indices.begin(), indices.end()));
    DeviceBuffer<int32_t> work(2 * static_cast<size_t>(n > 0 ? n : 1));
    DeviceBuffer<int32_t> out(std::vector<int32_t>(2 * (sms + 1), -7));
    CUDA_CHECK(cudaDeviceSynchronize());  // pageable uploads may land after a non-blocking stream starts
    const PagedMqaScheduleParams p{d_lens.get(), d_idx.get(), work.get(), out.get(), n, sms};
    CUDA_CHECK(LaunchFunctor(PagedMqaScheduleKernel{p}, PagedMqaScheduleKernel::Shape(p), stream.get()));
    CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    ASSERT_EQ(out.Download(), ref::PagedMqaSchedule(lens, indices, sms)) << "iteration " << iter;
  }
}

}  // namespace
}  // namespace dspark
