// Synthetic workloads: length presets, arrival processes, and max_model_len truncation.
//
// Presets (workloads/README.md):
//  - speed-8k:   8192 prompt / 1024 output tokens, like the seed's SPEED-Bench throughput_8k
//                runs (prompts normalised to exactly 8192 tokens, 1024 forced output tokens);
//                default max(32, 2 x concurrency) requests, as the seed ran.
//  - batch1-512: 512 / 128, the seed's batch-1 TPOT test; default concurrency 1, 8 requests,
//                acceptance preset "repeated-prompt".
//  - chat:       Azure-like conversation mix: prompt ~ LogNormal(6.633, 0.985) clamped to
//                [2, 14050], output ~ LogNormal(5.019, 0.859) clamped to [7, 1000] (moments of
//                the log lengths and the ranges of the Azure LLM inference 2023 conversation
//                trace, 19,366 requests); default 1000 requests.
// Arrivals: rate = inf puts every request at t = 0 (a closed loop then comes from the
// client's concurrency limit, see engine.h); a finite rate draws gaps from a gamma
// distribution with shape = burstiness and mean 1 / rate (burstiness 1 is Poisson), as
// `vllm bench serve --burstiness` does.
#pragma once

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "sim/workload/rng.h"
#include "sim/workload/trace.h"

namespace dspark::sim {

struct WorkloadPreset {
  std::string name;
  std::string acceptance_preset;  // acceptance preset the workload implies
  int32_t default_concurrency;    // -1: none (the client is open loop unless told)
};

absl::StatusOr<WorkloadPreset> FindWorkloadPreset(absl::string_view name);
std::vector<std::string> WorkloadPresetNames();

// Default request count of a preset at a concurrency (0 = unlimited).
int64_t DefaultNumRequests(const WorkloadPreset& preset, int32_t concurrency);

// num_requests requests of the preset's lengths (ids 0..n-1, arrival 0), from `lengths`.
absl::StatusOr<std::vector<RequestSpec>> GeneratePreset(const WorkloadPreset& preset,
                                                        int64_t num_requests, Rng& lengths);

// Sets arrival_s of every request (in order) from the arrival process.
absl::Status AssignArrivals(std::vector<RequestSpec>& requests, double rate_per_s,
                            double burstiness, Rng& arrivals);

// Makes prompt_len + output_len <= max_model_len: the prompt keeps at most max_model_len - 1
// tokens, then the output is cut to what is left. Returns how many requests changed.
int64_t TruncateToModelLen(std::vector<RequestSpec>& requests, int32_t max_model_len);

}  // namespace dspark::sim
