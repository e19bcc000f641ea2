// When to stop taking timed samples of one benchmark row, after NVBench's stopping criterion
// (nvbench/detail/stdrel_criterion: a minimum count, then stop once the noise is low, with a
// time limit per measurement): instead of a fixed count, a row takes samples until
//   - it holds max_samples, or
//   - it holds at least min_samples and the relative standard error of the mean,
//     s / sqrt(n) / mean, is at most max_noise (0: off), or
//   - its timed samples took max_time_s of wall time (0: no limit). The time limit wins over
//     min_samples, so a slow row still ends on time (its count and reason say so).
// Host-only (no CUDA), so it is unit-tested on synthetic samples; sim/exec/gpu_timing.cuh
// drives it. The mean and variance are Welford's running sums (one pass, no sample kept).
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dspark::timing {

struct StoppingCriterion {
  int64_t min_samples = 20;    // [samples] before the noise may stop the row
  int64_t max_samples = 1000;  // [samples] never more
  double max_noise = 0.005;    // [fraction] relative standard error of the mean; 0: never stop on noise
  double max_time_s = 1.0;     // [s] wall time of the row's timed samples; 0: no limit

  // Exactly `n` samples: what --reps means for microbench and calibrate.
  static StoppingCriterion Fixed(int64_t n);
  // InvalidArgument naming the option (--min-samples, --reps, --max-noise, --max-time-s).
  absl::Status Validate() const;
};

enum class StopReason {
  kNotStopped,  // still sampling
  kNoise,       // the relative standard error fell to max_noise
  kTime,        // max_time_s reached
  kMaxSamples,  // max_samples taken (or a fixed count)
};
std::string_view StopReasonName(StopReason reason);  // "sampling", "noise", "time", "max_samples"

class SampleStopping {
 public:
  explicit SampleStopping(const StoppingCriterion& criterion);

  // Records one sample [µs], taken when the row's timed samples had run `elapsed_s` [s] (its
  // own time included). Returns done().
  bool Add(double sample_us, double elapsed_s);

  bool done() const { return reason_ != StopReason::kNotStopped; }
  StopReason reason() const { return reason_; }
  int64_t count() const { return n_; }
  double mean_us() const { return mean_; }
  // s / sqrt(n) / |mean| [fraction]; infinity below 2 samples or at a zero mean.
  double relative_std_error() const;

 private:
  StoppingCriterion criterion_;
  StopReason reason_ = StopReason::kNotStopped;
  int64_t n_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;  // sum of squared deviations from the running mean [µs^2]
};

// The sampling loop of a timing method: calls `sample` (returning one sample [µs], or an error)
// until `criterion` stops, feeding each sample and the loop's wall time so far to the rule.
// `stopping` (optional) receives the final state (reason, noise). The one loop of every timed
// row: the CUDA-event samples (sim/exec/gpu_timing.cuh's TimeSamples) and the CUPTI samples
// (sim/studies/metadata_bench.cu) both run through it.
template <class Sample>
absl::StatusOr<std::vector<double>> SampleUntilStopped(const StoppingCriterion& criterion, Sample&& sample,
                                                       SampleStopping* stopping = nullptr) {
  SampleStopping rule(criterion);
  std::vector<double> samples;
  const auto t0 = std::chrono::steady_clock::now();
  while (!rule.done()) {
    absl::StatusOr<double> us = sample();
    if (!us.ok()) return us.status();
    samples.push_back(*us);
    rule.Add(*us, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (stopping != nullptr) *stopping = rule;
  return samples;
}

}  // namespace dspark::timing
