// The adaptive-verification allocation kernel on the GPU against the reference: CPU and GPU
// must agree exactly (docs/design.md section 6), including on ties and padding tails.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/reference/topb_alloc.h"
#include "kernels/topb_alloc.cuh"
#include "tests/common/gpu_test_util.cuh"

namespace dspark {
namespace {

TEST(TopBAllocGpu, MatchesReferenceAndEmulationOnRandomCasesWithTies) {
  DS_REQUIRE_GPU();
  std::mt19937_64 rng(20240611);
  for (int32_t nd : {1, 2, 3, 7, 17, 65, 256, 257, 819}) {
    for (int trial = 0; trial < 6; ++trial) {
      const int32_t max_k = 5;
      std::vector<float> scores(static_cast<size_t>(nd) * max_k);
      std::vector<int32_t> max_drafts(nd);
      for (int32_t r = 0; r < nd; ++r) {
        max_drafts[r] = static_cast<int32_t>(rng() % 6);
        float s = 1.0f;
        for (int32_t k = 0; k < max_k; ++k) {
          s *= trial % 2 ? 0.5f + 0.125f * static_cast<float>(rng() % 4)
                         : static_cast<float>((rng() >> 11) * 0x1.0p-53);
          scores[static_cast<size_t>(r) * max_k + k] = s;
        }
      }
      int32_t eligible = 0;
      for (int32_t d : max_drafts) eligible += d;
      const int32_t budget = static_cast<int32_t>(rng() % static_cast<uint64_t>(eligible + 2));
      const std::vector<int32_t> tail = {0, 0, 0};
      const int32_t r_total = nd + 3;

      DeviceBuffer<float> d_scores(scores);
      DeviceBuffer<int32_t> d_max(max_drafts), d_tail(tail), d_qsl(r_total + 1), d_kept(nd);
      d_qsl.FillBytes(0xff);
      d_kept.FillBytes(0xff);
      TopBAllocParams p{d_scores.get(), d_max.get(), d_tail.get(), d_qsl.get(), d_kept.get(),
                        nd, r_total, max_k, budget, 1};
      ASSERT_TRUE(CanImplementTopBAlloc(p).ok());
      CUDA_CHECK(LaunchTopBAlloc(p, nullptr));
      CUDA_CHECK(cudaDeviceSynchronize());

      const ref::TopBAllocation want = ref::TopBAlloc(scores, max_drafts, max_k, budget, 1, tail);
      EXPECT_EQ(d_kept.Download(), want.kept) << "nd=" << nd << " trial=" << trial;
      EXPECT_EQ(d_qsl.Download(), want.query_start_loc) << "nd=" << nd << " trial=" << trial;

      std::vector<int32_t> cpu_qsl(r_total + 1, -99), cpu_kept(nd, -99);
      TopBAllocParams h{scores.data(), max_drafts.data(), tail.data(), cpu_qsl.data(),
                        cpu_kept.data(), nd, r_total, max_k, budget, 1};
      EmulateTopBAlloc(h);
      EXPECT_EQ(d_qsl.Download(), cpu_qsl) << "CPU emulation and GPU differ: nd=" << nd;
      if (HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace dspark
