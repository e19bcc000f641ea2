#include "sim/observe/serving_result.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "sim/workload/input_file.h"
#include "sim/observe/metrics.h"

namespace dspark::sim {
namespace {

constexpr absl::string_view kLatencyMetrics[] = {"ttft", "tpot", "itl", "e2el"};
constexpr absl::string_view kGoodputMetrics[] = {"ttft", "tpot", "e2el"};  // vLLM's VALID_NAMES

bool OneOf(absl::string_view name, absl::Span<const absl::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// numpy's mean, median, std (population, ddof = 0) and percentiles (linear) of `v` [s], in ms;
// an empty list gives 0s, as vLLM's `np.mean(x or 0)` does.
LatencyStats Latency(absl::string_view metric, std::vector<double>& v, const std::vector<double>& percentiles) {
  std::sort(v.begin(), v.end());
  double mean = 0, var = 0;
  for (double x : v) mean += x;
  if (!v.empty()) mean /= static_cast<double>(v.size());
  for (double x : v) var += (x - mean) * (x - mean);
  if (!v.empty()) var /= static_cast<double>(v.size());
  LatencyStats out;
  out.metric = std::string(metric);
  out.mean_ms = mean * 1e3;
  out.median_ms = Percentile(v, 50) * 1e3;
  out.std_ms = std::sqrt(var) * 1e3;
  for (double p : percentiles) out.percentiles_ms.emplace_back(p, Percentile(v, p) * 1e3);
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParsePercentileMetrics(absl::string_view text) {
  std::vector<std::string> out;
  for (absl::string_view piece : absl::StrSplit(text, ',')) {
    piece = absl::StripAsciiWhitespace(piece);
    if (!OneOf(piece, kLatencyMetrics))
      return absl::InvalidArgumentError(absl::StrCat(
          "--percentile-metrics: expected a comma list of ttft, tpot, itl, e2el, got '",
          Abbreviate(piece), "'"));
    if (std::find(out.begin(), out.end(), piece) == out.end()) out.emplace_back(piece);
  }
  return out;
}

absl::StatusOr<std::vector<double>> ParseMetricPercentiles(absl::string_view text) {
  std::vector<double> out;
  for (absl::string_view piece : absl::StrSplit(text, ',')) {
    piece = absl::StripAsciiWhitespace(piece);
    double p = 0;
    if (!absl::SimpleAtod(piece, &p) || !(p >= 0 && p <= 100))
      return absl::InvalidArgumentError(absl::StrCat(
          "--metric-percentiles: expected a comma list of percentiles in [0, 100], got '",
          Abbreviate(piece), "'"));
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

// vllm/benchmarks/serve.py parse_goodput() and check_goodput_args(): "KEY:VALUE" pairs, the key
// one of ttft, tpot, e2el, the value a non-negative number of milliseconds.
absl::StatusOr<std::vector<std::pair<std::string, double>>> ParseGoodput(
    const std::vector<std::string>& pairs) {
  std::vector<std::pair<std::string, double>> out;
  for (const std::string& arg : pairs)
    for (absl::string_view pair : absl::StrSplit(arg, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      const std::vector<absl::string_view> kv = absl::StrSplit(pair, ':');
      double ms = 0;
      if (kv.size() != 2 || !OneOf(kv[0], kGoodputMetrics) || !absl::SimpleAtod(kv[1], &ms) ||
          !(ms >= 0) || !std::isfinite(ms))
        return absl::InvalidArgumentError(absl::StrCat(
            "--goodput: expected KEY:VALUE pairs, KEY one of ttft, tpot, e2el and VALUE a "
            "number of milliseconds >= 0 (e.g. --goodput ttft:200 tpot:50), got '",
            Abbreviate(pair), "'"));
      for (auto& [name, value] : out)
        if (name == kv[0])
          return absl::InvalidArgumentError(
              absl::StrCat("--goodput: '", kv[0], "' is given twice"));
      out.emplace_back(std::string(kv[0]), ms);
    }
  return out;
}

std::string PercentileWord(double p) {
  if (p == std::floor(p)) return absl::StrCat(static_cast<int64_t>(p));
  return absl::StrFormat("%g", p);
}

const std::vector<std::string>& ServingColumns() {
  static const auto* columns = [] {
    auto* c = new std::vector<std::string>{
        "completed",          "failed",           "total_input_tokens",    "total_output_tokens",
        "duration",           "request_throughput", "request_goodput",     "output_throughput",
        "total_token_throughput"};
    for (absl::string_view metric : kLatencyMetrics)
      for (absl::string_view stat : {"mean", "median", "std", "p50", "p90", "p99"})
        c->push_back(absl::StrCat(stat, "_", metric, "_ms"));
    return c;
  }();
  return *columns;
}

std::vector<std::string> VllmResultKeyOrder(const ResultSpec& spec) {
  std::vector<std::string> keys = {
      "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate",
      "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
      "total_output_tokens", "request_throughput", "request_goodput", "output_throughput",
      "total_token_throughput", "latencies", "queue_times", "max_output_tokens_per_s", "max_concurrent_requests",
      "rtfx", "spec_decode_acceptance_rate", "spec_decode_acceptance_length", "spec_decode_num_drafts",
      "spec_decode_draft_tokens", "spec_decode_accepted_tokens", "spec_decode_per_position_acceptance_rates"};
  for (const std::string& metric : spec.percentile_metrics) {
    for (const char* stat : {"mean", "median", "std"}) keys.push_back(absl::StrCat(stat, "_", metric, "_ms"));
    for (double p : spec.metric_percentiles) keys.push_back(absl::StrCat("p", PercentileWord(p), "_", metric, "_ms"));
  }
  return keys;
}

nlohmann::ordered_json VllmResultFile(const nlohmann::json& summary, const nlohmann::json& lists,
                                      const ResultSpec& spec, const std::string& date) {
  nlohmann::ordered_json out;
  std::vector<std::string> placed;
  for (const std::string& key : VllmResultKeyOrder(spec)) {
    placed.push_back(key);
    if (key == "date") {
      out[key] = date;
    } else if (lists.contains(key)) {
      out[key] = nlohmann::ordered_json(lists[key]);
    } else if (summary.contains(key)) {
      out[key] = nlohmann::ordered_json(summary[key]);
    }
  }
  for (const auto& [key, value] : summary.items())
    if (std::find(placed.begin(), placed.end(), key) == placed.end())
      out[key] = nlohmann::ordered_json(value);
  return out;
}

bool IsServingKey(absl::string_view key) {
  const auto& columns = ServingColumns();
  if (std::find(columns.begin(), columns.end(), key) != columns.end()) return true;
  if (!absl::StartsWith(key, "p") || !absl::EndsWith(key, "_ms")) return false;
  for (absl::string_view metric : kLatencyMetrics)
    if (absl::EndsWith(key, absl::StrCat("_", metric, "_ms"))) return true;
  return false;
}

const LatencyStats* ServingResult::latency(absl::string_view metric) const {
  for (const LatencyStats& l : latencies)
    if (l.metric == metric) return &l;
  return nullptr;
}

ServingResult ComputeServingResult(ServingSamples& s, const ResultSpec& spec) {
  const double d = s.duration_s;
  ServingResult out;
  out.completed = s.completed;
  out.failed = s.failed;
  out.total_input_tokens = s.input_tokens;
  out.total_output_tokens = s.output_tokens;
  out.duration = d;
  out.request_throughput = d > 0 ? s.completed / d : 0.0;
  out.output_throughput = d > 0 ? s.output_tokens / d : 0.0;
  out.total_token_throughput = d > 0 ? (s.input_tokens + s.output_tokens) / d : 0.0;
  if (!spec.goodput_ms.empty()) {
    // calculate_metrics(): a request is good when every SLO >= its value.
    int64_t good = 0;
    for (size_t i = 0; i < s.ttft_s.size(); ++i) {
      bool ok = true;
      for (const auto& [name, slo_ms] : spec.goodput_ms) {
        const double v = name == "ttft" ? s.ttft_s[i] : name == "tpot" ? s.all_tpot_s[i] : s.e2el_s[i];
        ok = ok && slo_ms / 1e3 >= v;
      }
      good += ok;
    }
    out.request_goodput = d > 0 ? good / d : 0.0;
  }
  for (const std::string& metric : spec.percentile_metrics) {
    std::vector<double>& v = metric == "ttft"   ? s.ttft_s
                             : metric == "tpot" ? s.tpot_s
                             : metric == "itl"  ? s.itl_s
                                                : s.e2el_s;
    out.latencies.push_back(Latency(metric, v, spec.metric_percentiles));
  }
  return out;
}

nlohmann::json ServingResultJson(const ServingResult& r) {
  nlohmann::json out = {{"completed", r.completed},
                        {"failed", r.failed},
                        {"total_input_tokens", r.total_input_tokens},
                        {"total_output_tokens", r.total_output_tokens},
                        {"duration", r.duration},
                        {"request_throughput", r.request_throughput},
                        {"output_throughput", r.output_throughput},
                        {"total_token_throughput", r.total_token_throughput},
                        {"request_goodput", r.request_goodput ? nlohmann::json(*r.request_goodput) : nlohmann::json()}};
  for (const LatencyStats& l : r.latencies) {
    out[absl::StrCat("mean_", l.metric, "_ms")] = l.mean_ms;
    out[absl::StrCat("median_", l.metric, "_ms")] = l.median_ms;
    out[absl::StrCat("std_", l.metric, "_ms")] = l.std_ms;
    for (const auto& [p, v] : l.percentiles_ms) out[absl::StrCat("p", PercentileWord(p), "_", l.metric, "_ms")] = v;
  }
  if (r.max_output_tokens_per_s) out["max_output_tokens_per_s"] = *r.max_output_tokens_per_s;
  if (r.max_concurrent_requests) out["max_concurrent_requests"] = *r.max_concurrent_requests;
  if (r.rtfx) out["rtfx"] = *r.rtfx;
  if (r.spec_decode) {
    const SpecDecodeResult& sd = *r.spec_decode;
    out["spec_decode_acceptance_rate"] = sd.acceptance_rate;
    out["spec_decode_acceptance_length"] = sd.acceptance_length;
    out["spec_decode_num_drafts"] = sd.num_drafts;
    out["spec_decode_draft_tokens"] = sd.draft_tokens;
    out["spec_decode_accepted_tokens"] = sd.accepted_tokens;
    out["spec_decode_per_position_acceptance_rates"] = sd.per_position_acceptance_rates;
  }
  return out;
}

}  // namespace dspark::sim
