#include "sim/exec/sample_stopping.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"

namespace dspark::timing {

StoppingCriterion StoppingCriterion::Fixed(int64_t n) {
  StoppingCriterion c;
  c.min_samples = n;
  c.max_samples = n;
  c.max_noise = 0.0;
  c.max_time_s = 0.0;
  return c;
}

absl::Status StoppingCriterion::Validate() const {
  if (min_samples < 1)
    return absl::InvalidArgumentError(absl::StrFormat("--min-samples: expected >= 1, got %d", min_samples));
  if (max_samples < min_samples)
    return absl::InvalidArgumentError(
        absl::StrFormat("--reps: the most samples per row must be >= --min-samples = %d, got %d", min_samples,
                        max_samples));
  if (!(max_noise >= 0.0) || max_noise >= 1.0)
    return absl::InvalidArgumentError(
        absl::StrFormat("--max-noise: expected a percentage in [0, 100), got %g", 100.0 * max_noise));
  if (!(max_time_s >= 0.0) || !std::isfinite(max_time_s))
    return absl::InvalidArgumentError(absl::StrFormat("--max-time-s: expected seconds >= 0, got %g", max_time_s));
  return absl::OkStatus();
}

std::string_view StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kNotStopped: return "sampling";
    case StopReason::kNoise: return "noise";
    case StopReason::kTime: return "time";
    case StopReason::kMaxSamples: return "max_samples";
  }
  return "unknown";
}

SampleStopping::SampleStopping(const StoppingCriterion& criterion) : criterion_(criterion) {
  if (criterion_.max_samples <= 0) reason_ = StopReason::kMaxSamples;
}

double SampleStopping::relative_std_error() const {
  if (n_ < 2 || mean_ == 0.0) return std::numeric_limits<double>::infinity();
  const double variance = m2_ / static_cast<double>(n_ - 1);
  return std::sqrt(variance / static_cast<double>(n_)) / std::fabs(mean_);
}

bool SampleStopping::Add(double sample_us, double elapsed_s) {
  if (done()) return true;
  ++n_;
  const double delta = sample_us - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_ += delta * (sample_us - mean_);
  if (n_ >= criterion_.max_samples) {
    reason_ = StopReason::kMaxSamples;
  } else if (criterion_.max_noise > 0.0 && n_ >= criterion_.min_samples &&
             relative_std_error() <= criterion_.max_noise) {
    reason_ = StopReason::kNoise;
  } else if (criterion_.max_time_s > 0.0 && elapsed_s >= criterion_.max_time_s) {
    reason_ = StopReason::kTime;
  }
  return done();
}

}  // namespace dspark::timing
