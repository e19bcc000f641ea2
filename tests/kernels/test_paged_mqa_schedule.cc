// DeepGEMM's varlen paged-MQA-logits scheduler metadata (kernels/paged_mqa_schedule.cuh) under CPU
// emulation, against the reference written from DeepGEMM's semantics
// (kernels/reference/paged_mqa_schedule.h) and against hand-worked cases.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/common/grid.h"
#include "kernels/paged_mqa_schedule.cuh"
#include "kernels/reference/paged_mqa_schedule.h"

namespace dspark {
namespace {

std::vector<int32_t> RunKernel(const std::vector<int32_t>& lens, const std::vector<int32_t>& indices, int32_t sms) {
  const int32_t n = static_cast<int32_t>(lens.size());
  std::vector<int32_t> work(2 * static_cast<size_t>(n > 0 ? n : 1), -7);
  std::vector<int32_t> out(2 * static_cast<size_t>(sms + 1), -7);
  const PagedMqaScheduleParams p{lens.data(), indices.data(), work.data(), out.data(), n, sms};
  EmulateGrid(PagedMqaScheduleKernel{p}, PagedMqaScheduleKernel::Shape(p));
  return out;
}

// Worked by hand. Tokens 0 and 1 (request 0) pair into one atom of length 301: 2 segments;
// token 2 (request 1) alone, 5 tokens: 1 segment; token 3 (request 2) alone, 512: 2 segments.
// Prefix 2, 3, 5 over 4 SMs: q = 1, r = 1, so SM 3 (the last r) takes 2 and the starts are
// 0, 1, 2, 3 and the end marker 5.
TEST(PagedMqaSchedule, HandWorkedPairsAndReversedSplit) {
  const std::vector<int32_t> lens = {300, 301, 5, 512}, indices = {0, 0, 1, 2};
  const std::vector<int32_t> want = {0, 0, 0, 1, 2, 0, 3, 0, 4, 0};
  EXPECT_EQ(ref::PagedMqaSchedule(lens, indices, 4), want);
  EXPECT_EQ(RunKernel(lens, indices, 4), want);
}

// Three tokens of one request: (0, 1) pair, 2 is alone (an odd tail), lengths from the later
// token. 1000 -> 4 segments, 1001 -> 4; 8 segments over 3 SMs: 2, 3, 3.
TEST(PagedMqaSchedule, HandWorkedOddTail) {
  const std::vector<int32_t> lens = {999, 1000, 1001}, indices = {7, 7, 7};
  const std::vector<int32_t> want = {0, 0, 0, 2, 2, 1, 3, 0};
  EXPECT_EQ(ref::PagedMqaSchedule(lens, indices, 3), want);
  EXPECT_EQ(RunKernel(lens, indices, 3), want);
}

TEST(PagedMqaSchedule, EmptyAndZeroLengths) {
  for (const auto& lens : {std::vector<int32_t>{}, std::vector<int32_t>{0, 0, 0}}) {
    std::vector<int32_t> indices(lens.size());
    for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int32_t>(i);
    const std::vector<int32_t> got = RunKernel(lens, indices, 132);
    EXPECT_EQ(got, ref::PagedMqaSchedule(lens, indices, 132));
    // Nothing to schedule: every SM points past the last token with offset 0.
    for (size_t s = 0; s <= 132; ++s) {
      EXPECT_EQ(got[2 * s], static_cast<int32_t>(lens.size()));
      EXPECT_EQ(got[2 * s + 1], 0);
    }
  }
}

// Random decode batches as the indexer hands them over: requests of 1 to 6 tokens (DSpark
// verification, K = 5), per-token lengths growing inside a request, padding rows (length 0,
// each its own request id), up to 1536 tokens; 132 SMs and a few small SM counts.
TEST(PagedMqaSchedule, RandomBatchesEqualReference) {
  std::mt19937_64 rng(20261201);
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<int32_t> lens, indices;
    const int32_t reqs = static_cast<int32_t>(rng() % 257);
    for (int32_t r = 0; r < reqs; ++r) {
      const int32_t q = 1 + static_cast<int32_t>(rng() % 6);
      const int32_t base = static_cast<int32_t>(rng() % (iter % 3 == 0 ? 200 : 140000));
      for (int32_t k = 0; k < q; ++k) {
        lens.push_back(base + k + 1);
        indices.push_back(r);
      }
    }
    const int32_t pad = static_cast<int32_t>(rng() % 8);
    for (int32_t k = 0; k < pad; ++k) {
      lens.push_back(0);
      indices.push_back(reqs + k);
    }
    const int32_t sms = (iter % 4 == 0) ? 1 + static_cast<int32_t>(rng() % 40) : 132;
    ASSERT_EQ(RunKernel(lens, indices, sms), ref::PagedMqaSchedule(lens, indices, sms)) << "iteration " << iter;
  }
}

}  // namespace
}  // namespace dspark
