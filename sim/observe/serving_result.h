// The serving result in `vllm bench serve`'s keys and units (vllm/benchmarks/serve.py:
// calculate_metrics(), benchmark() and main_async()), so that vLLM's result scripts read our
// files: completed, failed, total_input_tokens, total_output_tokens, duration [s],
// request_throughput [req/s], request_goodput [req/s], output_throughput and
// total_token_throughput [tok/s], and mean_/median_/std_/p{N}_ of ttft_ms, tpot_ms, itl_ms and
// e2el_ms [ms]. This is the one spelling of these metrics: summary.json holds them at its top
// level, sweep rows and sweep.csv use the same keys (ServingColumns()), and
// plots/results_io.py reads them (its SERVING_COLUMNS equals ServingColumns(), a test checks).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace dspark::sim {

// What the result reports, from --percentile-metrics, --metric-percentiles and --goodput.
struct ResultSpec {
  // Metrics with mean/median/std/percentile keys, of ttft, tpot, itl, e2el. vLLM's default
  // is ttft,tpot,itl with percentile 99; ours reports all four at 50, 90 and 99 (a superset).
  std::vector<std::string> percentile_metrics = {"ttft", "tpot", "itl", "e2el"};
  std::vector<double> metric_percentiles = {50, 90, 99};  // in [0, 100]
  // Service-level objectives [ms] of ttft, tpot, e2el; empty: request_goodput is null.
  std::vector<std::pair<std::string, double>> goodput_ms;
};

absl::StatusOr<std::vector<std::string>> ParsePercentileMetrics(absl::string_view text);
absl::StatusOr<std::vector<double>> ParseMetricPercentiles(absl::string_view text);
// `pairs` as given after --goodput ("ttft:200", "tpot:50"; one config-file value may hold
// several, separated by spaces).
absl::StatusOr<std::vector<std::pair<std::string, double>>> ParseGoodput(
    const std::vector<std::string>& pairs);

// vLLM's p_word: "99" for 99.0, "99.9" for 99.9.
std::string PercentileWord(double p);

// The serving keys every result has, in the order of sweep.csv: vLLM's counts and
// throughputs, then mean/median/std/p50/p90/p99 of each latency metric.
const std::vector<std::string>& ServingColumns();

// The samples of one run, from which the result is computed.
struct ServingSamples {
  int64_t completed = 0, failed = 0, input_tokens = 0, output_tokens = 0;
  double duration_s = 0;  // first submission to last finish
  // [s] per finished request; tpot only of requests with > 1 output token, all_tpot with 0
  // for the others (as vLLM's goodput check uses it); itl per delivered chunk.
  std::vector<double> ttft_s, tpot_s, all_tpot_s, e2el_s, itl_s;
};

// One latency metric's statistics [ms]: numpy's mean, median, std (ddof 0) and percentiles.
struct LatencyStats {
  std::string metric;  // ttft, tpot, itl or e2el
  double mean_ms = 0, median_ms = 0, std_ms = 0;
  std::vector<std::pair<double, double>> percentiles_ms;  // (percentile, value), --metric-percentiles order
};

// vLLM's spec-decode keys, present when drafts were verified.
struct SpecDecodeResult {
  double acceptance_rate = 0;    // [%] accepted / verified drafts
  double acceptance_length = 0;  // 1 + accepted / drafts
  int64_t num_drafts = 0, draft_tokens = 0, accepted_tokens = 0;
  std::vector<double> per_position_acceptance_rates;
};

// The serving result, typed: what ServingResultJson writes as vLLM's keys. A new vLLM key is a
// field here and one line in ServingResultJson.
struct ServingResult {
  int64_t completed = 0, failed = 0, total_input_tokens = 0, total_output_tokens = 0;
  double duration = 0;  // [s]
  double request_throughput = 0;            // [req/s]
  std::optional<double> request_goodput;    // [req/s]; none without --goodput (null)
  double output_throughput = 0, total_token_throughput = 0;  // [tok/s]
  std::vector<LatencyStats> latencies;      // --percentile-metrics order
  // Set by the metrics observer (MetricsObserver::Finish); absent from a bare ServingResult().
  std::optional<double> max_output_tokens_per_s;
  std::optional<int64_t> max_concurrent_requests;
  std::optional<double> rtfx;
  std::optional<SpecDecodeResult> spec_decode;

  // The statistics of `metric`, or nullptr when it was not asked for.
  const LatencyStats* latency(absl::string_view metric) const;
};

// The result of `samples` under `spec`. The vectors are reordered.
ServingResult ComputeServingResult(ServingSamples& samples, const ResultSpec& spec);

// vLLM's result keys of `r` (the top level of summary.json; the one writer of these keys).
nlohmann::json ServingResultJson(const ServingResult& r);

// vLLM's --save-result keys in serve.py's order (without --save-detailed): the setup keys (date,
// endpoint_type, backend, label, model_id, tokenizer_id, num_prompts, request_rate, burstiness,
// max_concurrency), the results (duration ... total_token_throughput, latencies, queue_times,
// max_output_tokens_per_s, max_concurrent_requests, rtfx), the spec_decode_* keys, and
// mean_/median_/std_/p{N}_ of each of `spec`'s metrics. tests/scripts/test_vllm_serve_keys.py
// compares this order with vLLM's own serve.py.
std::vector<std::string> VllmResultKeyOrder(const ResultSpec& spec);

// The --save-result file: `summary`'s keys that vLLM has, in VllmResultKeyOrder(), with `date`
// (vLLM's "%Y%m%d-%H%M%S", local time) and `lists` (MetricsObserver::serving_lists()) in their
// places; then every other key of `summary`, in its own order.
nlohmann::ordered_json VllmResultFile(const nlohmann::json& summary, const nlohmann::json& lists,
                                      const ResultSpec& spec, const std::string& date);

// Whether `key` is one ServingResult writes (ServingColumns() or any p{N}_{metric}_ms).
bool IsServingKey(absl::string_view key);

}  // namespace dspark::sim
