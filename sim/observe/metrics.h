// Serving metrics as `vllm bench serve` defines them, and the per-step time series.
//
//  - TTFT: first token time - submission time.
//  - TPOT: (E2EL - TTFT) / (output_tokens - 1), over requests with more than one token.
//  - ITL: gaps between consecutive token deliveries of a request. A verification that emits
//    several tokens delivers them in one chunk (one ITL sample), as a streaming client sees it.
//  - E2EL: finish time - submission time.
//  - Output throughput: output tokens / benchmark duration (first submission to last finish).
//  - Mean acceptance length (vLLM): 1 + accepted drafts / verifications of requests that had
//    drafts.
// Percentiles use linear interpolation between order statistics (numpy's default).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "sim/engine/step_observer.h"
#include "sim/workload/trace.h"
#include "sim/observe/serving_result.h"

namespace dspark::sim {

struct Distribution {
  double mean = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0;
  int64_t count = 0;
};
// `values` is reordered.
Distribution Summarize(std::vector<double>& values);
double Percentile(const std::vector<double>& sorted, double pct);

struct RequestRecord {
  double submit_s = -1, first_token_s = -1, last_token_s = -1, finish_s = -1;
  int32_t output_tokens = 0;
  int32_t preemptions = 0;
  int32_t verifications = 0;   // with drafts proposed
  int32_t drafts_verified = 0;
  int32_t drafts_accepted = 0;
};

struct StepRecord {
  int64_t index;
  double start_s, duration_s;
  int8_t step_case;
  bool draft_step, graph_padded, host_view_stale;
  int32_t num_reqs_real, num_reqs, num_tokens_real, num_tokens, num_decodes, num_decode_tokens;
  int32_t num_prefills, num_prefill_tokens, draft_budget, eligible_drafts;
  float gpu_us, host_us;
};

// The run's speculative-decoding counts, as summary.json's metrics.speculative gives them.
struct SpeculativeCounts {
  double mean_acceptance_length = 0;  // 1 + accepted / verifications (0 without any)
  int64_t verifications = 0, drafts_proposed = 0, drafts_verified = 0, drafts_accepted = 0;
  double acceptance_rate = 0;  // accepted / verified drafts (0 without any)
  std::vector<double> per_position_acceptance_rate;
};

class MetricsObserver final : public StepObserver {
 public:
  // Keeps the StepRecord of every `step_record_stride`-th step (the rows steps.csv writes);
  // the per-case step aggregates of Finish always cover every step.
  explicit MetricsObserver(const std::vector<RequestSpec>& workload, int64_t step_record_stride = 1);

  absl::string_view name() const override { return "metrics"; }
  absl::Status OnStep(const StepPlan& plan) override;
  void OnArrival(int32_t req, double time_s) override {
    requests_[req].submit_s = time_s;
    if (first_submit_s_ < 0 || time_s < first_submit_s_) first_submit_s_ = time_s;
  }
  void OnTokens(int32_t req, double time_s, int32_t tokens) override;
  void OnVerification(int32_t req, int32_t proposed, int32_t verified, int32_t accepted) override;
  void OnOutcomes(double time_s, const RequestOutcome* outcomes, size_t n) override;
  void OnFinished(int32_t req, double time_s) override { requests_[req].finish_s = time_s; }
  void OnPreempted(int32_t req, double /*time_s*/) override {
    ++requests_[req].preemptions;
    ++preemptions_;
  }
  // Writes the project's metrics (preemptions, speculative, steps) into `section`; the
  // serving result in vLLM's keys is kept for serving_result().
  absl::Status Finish(nlohmann::json* section) override;

  // What the serving result reports (--percentile-metrics, --metric-percentiles, --goodput).
  void set_result_spec(const ResultSpec& spec) { result_spec_ = spec; }
  // After Finish: the serving result (sim/observe/serving_result.h; its vLLM keys are the top
  // level of summary.json).
  const ServingResult& serving_result() const { return serving_; }
  SpeculativeCounts speculative() const;
  int64_t preemptions() const { return preemptions_; }
  // vLLM's per-request lists of the --save-result file (without --save-detailed): latencies
  // (e2el [s]) and queue_times (client queue, arrival to submission [s]), completed requests in
  // id order. Kept out of serving_result(), so that summary.json stays small.
  const nlohmann::json& serving_lists() const { return serving_lists_; }
  // [K] accepted drafts at position k / drafts, as vLLM's spec-decode metrics give it.
  std::vector<double> PerPositionAcceptanceRate() const;

  const std::vector<RequestRecord>& requests() const { return requests_; }
  const std::vector<StepRecord>& steps() const { return steps_; }  // every stride-th step
  double mean_acceptance_length() const;

  // CSV text of the per-step series (every `stride`-th step of the records kept) and of the
  // per-request records.
  std::string StepsCsv(int64_t stride) const;
  std::string RequestsCsv() const;
  // Their header lines and rows, for a writer that streams them as the run goes (the same bytes).
  static const char* StepsCsvHeader();
  static void AppendStepsCsvRow(const StepRecord& s, std::string* out);
  static const char* RequestsCsvHeader();
  void AppendRequestsCsvRow(size_t i, std::string* out) const;  // request i of the workload

 private:
  const std::vector<RequestSpec>& workload_;
  std::vector<RequestRecord> requests_;
  int64_t step_record_stride_;
  std::vector<StepRecord> steps_;
  // Per-case aggregates over every step: counts (steps, stale host view, graph padded) and
  // sums (real requests, real tokens, duration [s]).
  std::array<int64_t, kNumStepCases> case_steps_{}, case_stale_{}, case_padded_{};
  std::array<double, kNumStepCases> case_reqs_{}, case_tokens_{}, case_time_s_{};
  int64_t total_steps_ = 0;
  double all_reqs_ = 0, all_tokens_ = 0;
  std::vector<float> itl_s_;  // [s] float halves the memory of the largest series
  // Delivered chunks per one-second bucket from the first submission (vLLM's
  // max_output_tokens_per_s counts a streamed chunk once, however many tokens it holds): only
  // the seconds that have any, so memory follows the steps, not the simulated time (which a slow
  // time model can make huge); events arrive in time order, so the last bucket is the one hit.
  std::map<int64_t, int64_t> chunks_per_s_;
  void CountChunks(double time_s, size_t n);
  double first_submit_s_ = -1;
  int64_t preemptions_ = 0;
  int64_t verifications_ = 0, drafts_proposed_ = 0, drafts_verified_ = 0, drafts_accepted_ = 0;
  std::vector<int64_t> by_accepted_;  // [a] verifications that accepted a drafts (a <= the most seen)
  ResultSpec result_spec_;
  ServingResult serving_;
  nlohmann::json serving_lists_;
};

}  // namespace dspark::sim
