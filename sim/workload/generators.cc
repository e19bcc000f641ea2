#include "sim/workload/generators.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/workload/input_file.h"

namespace dspark::sim {
namespace {

const std::vector<WorkloadPreset>& Presets() {
  static const auto* presets = new std::vector<WorkloadPreset>{
      {"speed-8k", "default", -1},
      {"batch1-512", "repeated-prompt", 1},
      {"chat", "default", -1},
  };
  return *presets;
}

int32_t ClampedLogNormal(Rng& rng, double mu, double sigma, int32_t lo, int32_t hi) {
  const double v = std::round(rng.LogNormal(mu, sigma));
  return static_cast<int32_t>(std::clamp(v, static_cast<double>(lo), static_cast<double>(hi)));
}

}  // namespace

std::vector<std::string> WorkloadPresetNames() {
  std::vector<std::string> names;
  for (const auto& p : Presets()) names.push_back(p.name);
  return names;
}

absl::StatusOr<WorkloadPreset> FindWorkloadPreset(absl::string_view name) {
  for (const auto& p : Presets())
    if (p.name == name) return p;
  return absl::InvalidArgumentError(absl::StrCat("--workload: expected one of ",
                                                 absl::StrJoin(WorkloadPresetNames(), ", "),
                                                 "; got '", Abbreviate(name), "'"));
}

int64_t DefaultNumRequests(const WorkloadPreset& preset, int32_t concurrency) {
  if (preset.name == "speed-8k") return std::max<int64_t>(32, 2 * int64_t{concurrency});
  if (preset.name == "batch1-512") return 8;
  return 1000;
}

absl::StatusOr<std::vector<RequestSpec>> GeneratePreset(const WorkloadPreset& preset,
                                                        int64_t num_requests, Rng& lengths) {
  if (num_requests < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("--num-requests: expected >= 1, got ", num_requests));
  std::vector<RequestSpec> out(static_cast<size_t>(num_requests));
  for (int64_t i = 0; i < num_requests; ++i) {
    RequestSpec& r = out[static_cast<size_t>(i)];
    r.id = i;
    if (preset.name == "speed-8k") {
      r.prompt_len = 8192;
      r.output_len = 1024;
    } else if (preset.name == "batch1-512") {
      r.prompt_len = 512;
      r.output_len = 128;
    } else {
      r.prompt_len = ClampedLogNormal(lengths, 6.633, 0.985, 2, 14050);
      r.output_len = ClampedLogNormal(lengths, 5.019, 0.859, 7, 1000);
    }
  }
  return out;
}

absl::Status AssignArrivals(std::vector<RequestSpec>& requests, double rate_per_s,
                            double burstiness, Rng& arrivals) {
  if (!(rate_per_s > 0))
    return absl::InvalidArgumentError(absl::StrCat("--request-rate: expected > 0, got ", rate_per_s));
  if (!(burstiness > 0) || !std::isfinite(burstiness))
    return absl::InvalidArgumentError(absl::StrCat("--burstiness: expected a finite value > 0, got ", burstiness));
  double t = 0.0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (std::isinf(rate_per_s)) {
      requests[i].arrival_s = 0.0;
      continue;
    }
    // vLLM sends the first request at once and waits a gap before each later one.
    if (i > 0) t += arrivals.Gamma(burstiness, 1.0 / (rate_per_s * burstiness));
    requests[i].arrival_s = t;
  }
  return absl::OkStatus();
}

int64_t TruncateToModelLen(std::vector<RequestSpec>& requests, int32_t max_model_len) {
  int64_t changed = 0;
  for (RequestSpec& r : requests) {
    if (int64_t{r.prompt_len} + r.output_len <= max_model_len) continue;
    ++changed;
    r.prompt_len = std::min(r.prompt_len, max_model_len - 1);
    r.output_len = std::min(r.output_len, max_model_len - r.prompt_len);
  }
  return changed;
}

}  // namespace dspark::sim
