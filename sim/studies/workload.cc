#include "sim/studies/workload.h"

#include <algorithm>
#include <cmath>

#include "sim/workload/generators.h"
#include "sim/workload/rng.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"

namespace dspark::sim {

namespace {

// Generated arrivals beyond kMaxArrivalS (--request-rate 1e-300, a tiny --burstiness) would
// round every latency to 0: an error naming the options, never a silently wrong result.
absl::Status CheckArrivalRange(const std::vector<RequestSpec>& requests, const RunConfig& config) {
  double last = 0;
  for (const RequestSpec& r : requests) last = std::max(last, r.arrival_s);
  if (last < kMaxArrivalS) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: the arrivals reach %g s, beyond 2^33 s = 8589934592 s, where a double still "
      "resolves 1 us; expected a higher rate",
      config.request_rate_given
          ? absl::StrFormat("--request-rate %g, --burstiness %g", config.request_rate, config.burstiness)
          : absl::StrFormat("--time-scale %g", config.time_scale),
      last));
}

}  // namespace

absl::StatusOr<Workload> BuildWorkload(const RunConfig& config) {
  Workload w;
  Rng arrivals(config.seed, RngStream::kArrivals);
  if (!config.trace_path.empty()) {
    // A trace row longer than max_model_len is a bad row (as vLLM rejects such a request),
    // unless --over-length skip or clip; generated presets are always cut below.
    TraceOptions options;
    options.format = config.trace_format;
    options.skip_bad_rows = config.skip_bad_rows;
    options.max_model_len = config.scheduler.max_model_len;
    options.over_length = config.over_length;
    // Only the requests replayed are parsed: memory follows --num-requests, not the file.
    if (config.num_requests > 0) options.max_requests = config.num_requests;
    auto trace = LoadTrace(config.trace_path, options);
    if (!trace.ok()) return trace.status();
    w.requests = std::move(trace->requests);
    w.info = {{"source", "trace"},
              {"path", config.trace_path},
              {"format", std::string(TraceFormatName(trace->format))},
              {"data_rows", trace->data_rows},
              {"skipped_bad_rows", trace->skipped_rows},
              {"skipped_examples", trace->skipped_examples},
              {"failed_requests_excluded", trace->failed_requests},
              {"read_whole_file", trace->read_whole_file}};
    if (trace->format == TraceFormat::kBurstGptLengths)
      w.info["other_models_excluded"] = trace->other_models_excluded;
    if (config.num_requests > 0 && static_cast<size_t>(config.num_requests) < w.requests.size())
      w.requests.resize(static_cast<size_t>(config.num_requests));
    if (!trace->has_arrivals && config.time_scale != 1.0)
      return absl::InvalidArgumentError(absl::StrCat(
          "--time-scale: ", config.trace_path,
          " has no timestamps to scale (lengths only); pace it with --request-rate"));
    if (config.request_rate_given || !trace->has_arrivals) {
      // A length-only trace at an infinite rate arrives all at t=0, as vLLM sends it.
      auto s = AssignArrivals(w.requests, config.request_rate, config.burstiness, arrivals);
      if (!s.ok()) return s;
      w.facts.arrivals = !trace->has_arrivals && !config.request_rate_given
                               ? "lengths only, all at t=0 (give --request-rate to spread them)"
                           : !trace->has_arrivals ? "lengths only, gamma process of --request-rate"
                                                  : "re-timed by --request-rate";
      w.info["arrivals"] = w.facts.arrivals;
    } else {
      for (RequestSpec& r : w.requests) r.arrival_s *= config.time_scale;
      w.facts.arrivals = config.time_scale == 1.0
                               ? "trace timestamps"
                               : absl::StrFormat("trace timestamps x %g (--time-scale)", config.time_scale);
      w.info["arrivals"] = w.facts.arrivals;
    }
    std::vector<std::string> notes;
    if (trace->has_hash_ids)
      notes.push_back(
          "the trace's hash_ids (prefix-cache blocks) are ignored: prefix caching is not "
          "modelled, so every prompt token is prefilled");
    if (!notes.empty()) w.info["notes"] = notes;
    w.facts.notes = notes;
    w.facts.name = config.trace_path;
    w.info["over_length"] = std::string(OverLengthName(config.over_length));
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
    w.facts.name = preset->name;
    w.facts.arrivals = std::isinf(config.request_rate) ? "all at t=0" : "gamma process";
    w.info = {{"source", "preset"}, {"preset", preset->name}, {"arrivals", w.facts.arrivals}};
    w.acceptance_preset = preset->acceptance_preset;
  }
  DS_RETURN_IF_ERROR(CheckArrivalRange(w.requests, config));
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
  // [s] first to last arrival (sorted above): with the request count, the offered rate.
  w.facts.arrival_span_s = w.requests.empty() ? 0.0 : w.requests.back().arrival_s - w.requests.front().arrival_s;
  w.info["arrival_span_s"] = w.facts.arrival_span_s;
  // A limit above the request count never binds (sim/engine.cc): report the one in effect.
  if (w.concurrency > 0 && static_cast<size_t>(w.concurrency) > w.requests.size())
    w.concurrency = static_cast<int32_t>(w.requests.size());
  w.info["concurrency"] = w.concurrency;
  w.info["acceptance_preset"] = w.acceptance_preset;
  if (w.requests.empty()) return absl::InvalidArgumentError("the workload has no requests");
  return w;
}

}  // namespace dspark::sim
