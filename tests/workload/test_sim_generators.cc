// Workload presets, arrival processes and max_model_len truncation.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/workload/generators.h"

namespace dspark::sim {
namespace {

TEST(Generators, FixedPresets) {
  Rng rng(1, RngStream::kLengths);
  auto speed = GeneratePreset(*FindWorkloadPreset("speed-8k"), 5, rng);
  ASSERT_TRUE(speed.ok());
  for (const auto& r : *speed) {
    EXPECT_EQ(r.prompt_len, 8192);
    EXPECT_EQ(r.output_len, 1024);
  }
  auto b1 = GeneratePreset(*FindWorkloadPreset("batch1-512"), 3, rng);
  ASSERT_TRUE(b1.ok());
  EXPECT_EQ((*b1)[2].prompt_len, 512);
  EXPECT_EQ((*b1)[2].output_len, 128);
  EXPECT_EQ((*b1)[2].id, 2);
  EXPECT_EQ(FindWorkloadPreset("batch1-512")->acceptance_preset, "repeated-prompt");
  EXPECT_EQ(FindWorkloadPreset("speed-16k").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GeneratePreset(*FindWorkloadPreset("chat"), 0, rng).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Generators, DefaultRequestCountsFollowTheSeed) {
  const WorkloadPreset speed = *FindWorkloadPreset("speed-8k");
  EXPECT_EQ(DefaultNumRequests(speed, 1), 32);
  EXPECT_EQ(DefaultNumRequests(speed, 128), 256);
  EXPECT_EQ(DefaultNumRequests(speed, 1024), 2048);
}

TEST(Generators, ChatMixMatchesTheAzureLogMoments) {
  Rng rng(3, RngStream::kLengths);
  auto chat = GeneratePreset(*FindWorkloadPreset("chat"), 40000, rng);
  ASSERT_TRUE(chat.ok());
  double lp = 0, lo = 0;
  for (const auto& r : *chat) {
    ASSERT_GE(r.prompt_len, 2);
    ASSERT_LE(r.prompt_len, 14050);
    ASSERT_GE(r.output_len, 7);
    ASSERT_LE(r.output_len, 1000);
    lp += std::log(r.prompt_len);
    lo += std::log(r.output_len);
  }
  // Clamping pulls the means in a little; the fit targets are 6.633 and 5.019.
  EXPECT_NEAR(lp / chat->size(), 6.633, 0.05);
  EXPECT_NEAR(lo / chat->size(), 5.019, 0.05);
}

TEST(Generators, InfiniteRatePutsEveryRequestAtZero) {
  std::vector<RequestSpec> reqs(10);
  Rng rng(1, RngStream::kArrivals);
  ASSERT_TRUE(AssignArrivals(reqs, std::numeric_limits<double>::infinity(), 1.0, rng).ok());
  for (const auto& r : reqs) EXPECT_EQ(r.arrival_s, 0.0);
}

TEST(Generators, PoissonAndGammaGapsHaveTheRequestedMeanAndBurstiness) {
  for (double burstiness : {1.0, 0.25, 4.0}) {
    std::vector<RequestSpec> reqs(50001);
    Rng rng(11, RngStream::kArrivals);
    ASSERT_TRUE(AssignArrivals(reqs, 20.0, burstiness, rng).ok());
    double s = 0, s2 = 0;
    for (size_t i = 1; i < reqs.size(); ++i) {
      const double gap = reqs[i].arrival_s - reqs[i - 1].arrival_s;
      ASSERT_GE(gap, 0.0);
      s += gap;
      s2 += gap * gap;
    }
    const double n = reqs.size() - 1, mean = s / n, var = s2 / n - mean * mean;
    EXPECT_EQ(reqs[0].arrival_s, 0.0);
    EXPECT_NEAR(mean, 0.05, 0.05 * 0.03) << burstiness;
    // Gamma(shape b, scale 1 / (rate b)): coefficient of variation^2 = 1 / b.
    EXPECT_NEAR(var / (mean * mean), 1.0 / burstiness, 0.08 / burstiness) << burstiness;
  }
}

TEST(Generators, RejectsBadRates) {
  std::vector<RequestSpec> reqs(2);
  Rng rng(1);
  EXPECT_EQ(AssignArrivals(reqs, 0.0, 1.0, rng).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AssignArrivals(reqs, 1.0, 0.0, rng).code(), absl::StatusCode::kInvalidArgument);
}

TEST(Generators, TruncationKeepsPromptPlusOutputWithinModelLen) {
  std::vector<RequestSpec> reqs = {{0, 0, 100, 100, {}}, {1, 0, 900, 200, {}}, {2, 0, 5000, 7, {}},
                                   {3, 0, 1023, 1, {}}};
  EXPECT_EQ(TruncateToModelLen(reqs, 1024), 2);
  EXPECT_EQ(reqs[0].prompt_len, 100);
  EXPECT_EQ(reqs[0].output_len, 100);
  EXPECT_EQ(reqs[1].prompt_len, 900);
  EXPECT_EQ(reqs[1].output_len, 124);
  EXPECT_EQ(reqs[2].prompt_len, 1023);
  EXPECT_EQ(reqs[2].output_len, 1);
  EXPECT_EQ(reqs[3].output_len, 1);
}

}  // namespace
}  // namespace dspark::sim
