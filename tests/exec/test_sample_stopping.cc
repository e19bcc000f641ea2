// The NVBench-style stopping rule of bench (sim/exec/sample_stopping.h) on synthetic samples.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/exec/sample_stopping.h"

namespace dspark::timing {
namespace {

// Feeds `samples` one per `dt_s` seconds until the rule stops; returns how many it took.
int64_t Feed(SampleStopping& s, const std::vector<double>& samples, double dt_s = 0.0) {
  for (size_t i = 0; i < samples.size(); ++i)
    if (s.Add(samples[i], dt_s * static_cast<double>(i + 1))) break;
  return s.count();
}

TEST(SampleStopping, FixedCountTakesExactlyN) {
  for (int64_t n : {1, 2, 7, 200}) {
    SampleStopping s(StoppingCriterion::Fixed(n));
    EXPECT_EQ(Feed(s, std::vector<double>(500, 10.0), 1.0), n);
    EXPECT_EQ(s.reason(), StopReason::kMaxSamples);
  }
  SampleStopping none(StoppingCriterion::Fixed(0));
  EXPECT_TRUE(none.done());
  EXPECT_EQ(none.count(), 0);
}

TEST(SampleStopping, ConstantSamplesStopOnNoiseAtMinSamples) {
  StoppingCriterion c;
  c.min_samples = 17;
  SampleStopping s(c);
  EXPECT_EQ(Feed(s, std::vector<double>(1000, 42.0)), 17);
  EXPECT_EQ(s.reason(), StopReason::kNoise);
  EXPECT_DOUBLE_EQ(s.mean_us(), 42.0);
  EXPECT_EQ(s.relative_std_error(), 0.0);
}

TEST(SampleStopping, NoiseStopsWhereTheStandardErrorFallsBelowTheLimit) {
  // Alternating 90, 110: mean 100, s -> 10, so s / sqrt(n) / mean <= 0.5% needs n >= 400.
  std::vector<double> v;
  for (int i = 0; i < 5000; ++i) v.push_back(i % 2 ? 110.0 : 90.0);
  StoppingCriterion c;
  c.min_samples = 10;
  c.max_samples = 100000;
  c.max_noise = 0.005;
  c.max_time_s = 0;
  SampleStopping s(c);
  const int64_t n = Feed(s, v);
  EXPECT_EQ(s.reason(), StopReason::kNoise);
  // s^2 = 100 n / (n - 1) for even n: the first even n with 10 sqrt(n / (n - 1)) / sqrt(n) / 100 <= 0.005.
  int64_t want = 0;
  for (int64_t k = 2; k < 5000; ++k) {
    const double mean = k % 2 ? (100.0 * (k - 1) + 90.0) / k : 100.0;
    double m2 = 0;
    for (int64_t i = 0; i < k; ++i) m2 += std::pow(v[i] - mean, 2);
    if (k >= 10 && std::sqrt(m2 / (k - 1) / k) / mean <= 0.005) {
      want = k;
      break;
    }
  }
  EXPECT_EQ(n, want);
  EXPECT_GE(n, 400);
  EXPECT_LE(n, 402);
  EXPECT_LE(s.relative_std_error(), 0.005);
}

TEST(SampleStopping, NoisyRowStopsOnTimeEvenBeforeMinSamples) {
  std::mt19937_64 rng(7);
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i) v.push_back(static_cast<double>(rng() % 1000));
  StoppingCriterion c;
  c.min_samples = 50;
  c.max_noise = 0.0001;
  c.max_time_s = 0.25;
  SampleStopping s(c);
  EXPECT_EQ(Feed(s, v, /*dt_s=*/0.01), 25);  // the 25th sample ends at 0.25 s
  EXPECT_EQ(s.reason(), StopReason::kTime);
}

TEST(SampleStopping, CapAtMaxSamplesWinsOverNoiseAndTime) {
  StoppingCriterion c;
  c.min_samples = 3;
  c.max_samples = 5;
  c.max_noise = 0.0;
  c.max_time_s = 0.0;
  SampleStopping s(c);
  EXPECT_EQ(Feed(s, {1, 100, 1, 100, 1, 100, 1}), 5);
  EXPECT_EQ(s.reason(), StopReason::kMaxSamples);
  EXPECT_TRUE(s.Add(5.0, 0.0));  // after the stop: nothing recorded
  EXPECT_EQ(s.count(), 5);
}

TEST(SampleStopping, StandardErrorMatchesTheTwoPassFormula) {
  const std::vector<double> v = {3.5, 9.25, 1.0, 4.0, 4.0, 12.5, 0.25};
  StoppingCriterion c = StoppingCriterion::Fixed(100);
  SampleStopping s(c);
  Feed(s, v);
  double mean = 0;
  for (double x : v) mean += x / v.size();
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  EXPECT_NEAR(s.mean_us(), mean, 1e-12);
  EXPECT_NEAR(s.relative_std_error(), std::sqrt(ss / (v.size() - 1) / v.size()) / mean, 1e-12);
  SampleStopping one(c);
  one.Add(5.0, 0.0);
  EXPECT_TRUE(std::isinf(one.relative_std_error()));
  EXPECT_EQ(StopReasonName(StopReason::kNoise), "noise");
  EXPECT_EQ(StopReasonName(StopReason::kNotStopped), "sampling");
}

TEST(SampleStopping, ValidateNamesTheOption) {
  StoppingCriterion c;
  EXPECT_TRUE(c.Validate().ok());
  c.min_samples = 0;
  EXPECT_NE(c.Validate().message().find("--min-samples"), std::string::npos);
  c = StoppingCriterion();
  c.max_samples = 5;
  EXPECT_NE(c.Validate().message().find("--reps"), std::string::npos);
  c = StoppingCriterion();
  c.max_noise = -0.01;
  EXPECT_NE(c.Validate().message().find("--max-noise"), std::string::npos);
  c.max_noise = NAN;
  EXPECT_NE(c.Validate().message().find("--max-noise"), std::string::npos);
  c = StoppingCriterion();
  c.max_time_s = -1;
  EXPECT_NE(c.Validate().message().find("--max-time-s"), std::string::npos);
  c.max_time_s = INFINITY;
  EXPECT_FALSE(c.Validate().ok());
}

// The shared sampling loop: a fixed count takes exactly that many samples, in order; the first
// failing sample ends it with that error.
TEST(SampleUntilStopped, FixedCountAndErrors) {
  int calls = 0;
  SampleStopping final_state(StoppingCriterion::Fixed(1));
  absl::StatusOr<std::vector<double>> got = SampleUntilStopped(
      StoppingCriterion::Fixed(4), [&]() -> absl::StatusOr<double> { return 1.0 + calls++; }, &final_state);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(final_state.reason(), StopReason::kMaxSamples);
  EXPECT_EQ(final_state.count(), 4);
  calls = 0;
  got = SampleUntilStopped(StoppingCriterion::Fixed(4), [&]() -> absl::StatusOr<double> {
    if (++calls == 2) return absl::UnavailableError("no records");
    return 1.0;
  });
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace dspark::timing
