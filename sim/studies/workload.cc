#include "sim/studies/workload.h"

#include <algorithm>
#include <cmath>

#include "sim/workload/generators.h"
#include "sim/workload/rng.h"

namespace dspark::sim {

absl::StatusOr<Workload> BuildWorkload(const RunConfig& config) {
  Workload w;
  Rng arrivals(config.seed, RngStream::kArrivals);
  if (!config.trace_path.empty()) {
    // A trace row longer than max_model_len is a bad row (as vLLM rejects such a request);
    // only generated presets are cut below.
    auto trace = LoadTrace(config.trace_path, {config.trace_format, config.skip_bad_rows,
                                               config.scheduler.max_model_len});
    if (!trace.ok()) return trace.status();
    w.requests = std::move(trace->requests);
    w.info = {{"source", "trace"},
              {"path", config.trace_path},
              {"format", std::string(TraceFormatName(trace->format))},
              {"data_rows", trace->data_rows},
              {"skipped_bad_rows", trace->skipped_rows},
              {"skipped_examples", trace->skipped_examples},
              {"failed_requests_excluded", trace->failed_requests}};
    if (config.num_requests > 0 && static_cast<size_t>(config.num_requests) < w.requests.size())
      w.requests.resize(static_cast<size_t>(config.num_requests));
    if (config.request_rate_given) {
      auto s = AssignArrivals(w.requests, config.request_rate, config.burstiness, arrivals);
      if (!s.ok()) return s;
      w.info["arrivals"] = "re-timed by --request-rate";
    } else {
      w.info["arrivals"] = "trace timestamps";
    }
    w.acceptance_preset = "default";
    w.concurrency = std::max(config.concurrency, 0);
  } else {
    auto preset = FindWorkloadPreset(config.workload);
    if (!preset.ok()) return preset.status();
    w.concurrency = config.concurrency >= 0 ? config.concurrency
                                            : std::max(preset->default_concurrency, 0);
    const int64_t n = config.num_requests > 0 ? config.num_requests
                                              : DefaultNumRequests(*preset, w.concurrency);
    Rng lengths(config.seed, RngStream::kLengths);
    auto generated = GeneratePreset(*preset, n, lengths);
    if (!generated.ok()) return generated.status();
    w.requests = std::move(*generated);
    auto s = AssignArrivals(w.requests, config.request_rate, config.burstiness, arrivals);
    if (!s.ok()) return s;
    w.info = {{"source", "preset"}, {"preset", preset->name},
              {"arrivals", std::isinf(config.request_rate) ? "all at t=0" : "gamma process"}};
    w.acceptance_preset = preset->acceptance_preset;
  }
  if (!config.acceptance_preset.empty()) w.acceptance_preset = config.acceptance_preset;
  w.info["truncated_to_max_model_len"] = TruncateToModelLen(w.requests, config.scheduler.max_model_len);
  std::stable_sort(w.requests.begin(), w.requests.end(), [](const RequestSpec& a, const RequestSpec& b) {
    return a.arrival_s != b.arrival_s ? a.arrival_s < b.arrival_s : a.id < b.id;
  });
  int64_t prompt = 0, output = 0;
  for (const auto& r : w.requests) {
    prompt += r.prompt_len;
    output += r.output_len;
  }
  w.info["requests"] = static_cast<int64_t>(w.requests.size());
  w.info["prompt_tokens"] = prompt;
  w.info["output_tokens"] = output;
  w.info["concurrency"] = w.concurrency;
  w.info["acceptance_preset"] = w.acceptance_preset;
  if (w.requests.empty()) return absl::InvalidArgumentError("the workload has no requests");
  return w;
}

}  // namespace dspark::sim
