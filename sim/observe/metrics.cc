#include "sim/observe/metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/observe/serving_result.h"

namespace dspark::sim {

double Percentile(const std::vector<double>& sorted, double pct) {
  if (sorted.empty()) return 0.0;
  const double rank = pct / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

Distribution Summarize(std::vector<double>& values) {
  Distribution d;
  d.count = static_cast<int64_t>(values.size());
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / static_cast<double>(values.size());
  d.median = Percentile(values, 50);
  d.p90 = Percentile(values, 90);
  d.p99 = Percentile(values, 99);
  d.min = values.front();
  d.max = values.back();
  return d;
}

MetricsObserver::MetricsObserver(const std::vector<RequestSpec>& workload, int64_t step_record_stride)
    : workload_(workload), requests_(workload.size()), step_record_stride_(std::max<int64_t>(step_record_stride, 1)) {
  int64_t tokens = 0;
  for (const auto& r : workload) tokens += r.output_len;
  itl_s_.reserve(static_cast<size_t>(std::min<int64_t>(tokens, int64_t{1} << 26)));
}

absl::Status MetricsObserver::OnStep(const StepPlan& p) {
  const int c = static_cast<int>(p.step_case);
  ++total_steps_;
  ++case_steps_[c];
  case_stale_[c] += p.host_view_stale;
  case_padded_[c] += p.graph_padded;
  case_reqs_[c] += p.num_reqs_real;
  case_tokens_[c] += p.num_tokens_real;
  case_time_s_[c] += p.end_s - p.start_s;
  all_reqs_ += p.num_reqs_real;
  all_tokens_ += p.num_tokens_real;
  if (p.index % step_record_stride_ != 0) return absl::OkStatus();
  steps_.push_back({p.index, p.start_s, p.end_s - p.start_s, static_cast<int8_t>(p.step_case),
                    p.draft_step, p.graph_padded, p.host_view_stale, p.num_reqs_real, p.num_reqs,
                    p.num_tokens_real, p.num_tokens, p.num_decodes, p.num_decode_tokens,
                    p.num_prefills, p.num_prefill_tokens, p.draft_budget, p.eligible_drafts,
                    static_cast<float>(p.gpu_us), static_cast<float>(p.host_us)});
  return absl::OkStatus();
}

void MetricsObserver::OnTokens(int32_t req, double time_s, int32_t tokens) {
  CountChunks(time_s, 1);
  RequestRecord& r = requests_[req];
  if (r.first_token_s < 0) {
    r.first_token_s = time_s;
  } else {
    itl_s_.push_back(static_cast<float>(time_s - r.last_token_s));
  }
  r.last_token_s = time_s;
  r.output_tokens += tokens;
}

void MetricsObserver::OnVerification(int32_t req, int32_t proposed, int32_t verified,
                                     int32_t accepted) {
  if (proposed <= 0) return;
  RequestRecord& r = requests_[req];
  ++r.verifications;
  r.drafts_verified += verified;
  r.drafts_accepted += accepted;
  ++verifications_;
  // The accepted drafts are a prefix: positions 0 .. accepted-1 of this verification (counted
  // per position when read, from the verifications per accepted count).
  if (by_accepted_.size() <= static_cast<size_t>(accepted)) by_accepted_.resize(static_cast<size_t>(accepted) + 1, 0);
  ++by_accepted_[static_cast<size_t>(accepted)];
  drafts_proposed_ += proposed;
  drafts_verified_ += verified;
  drafts_accepted_ += accepted;
}

void MetricsObserver::CountChunks(double time_s, size_t n) {
  if (first_submit_s_ < 0 || time_s < first_submit_s_) return;
  // The engine stops a run whose clock passes 2^33 s (sim/engine/engine.cc), so the bucket fits.
  const auto bucket = static_cast<int64_t>(time_s - first_submit_s_);
  auto last = chunks_per_s_.empty() ? chunks_per_s_.end() : std::prev(chunks_per_s_.end());
  if (last == chunks_per_s_.end() || last->first != bucket) last = chunks_per_s_.try_emplace(bucket, 0).first;
  last->second += static_cast<int64_t>(n);
}

void MetricsObserver::OnOutcomes(double time_s, const RequestOutcome* outcomes, size_t n) {
  CountChunks(time_s, n);
  // OnVerification, OnTokens and OnFinished record by record, the run's totals kept in locals
  // meanwhile (stores through requests_ and itl_s_ would otherwise make the compiler reload
  // them each time).
  int64_t verifications = verifications_, proposed = drafts_proposed_, verified = drafts_verified_,
          accepted = drafts_accepted_;
  for (size_t i = 0; i < n; ++i) {
    const RequestOutcome& o = outcomes[i];
    RequestRecord& r = requests_[static_cast<size_t>(o.req)];
    if (o.verification && o.proposed > 0) {
      ++r.verifications;
      r.drafts_verified += o.verified;
      r.drafts_accepted += o.accepted;
      ++verifications;
      if (by_accepted_.size() <= static_cast<size_t>(o.accepted))
        by_accepted_.resize(static_cast<size_t>(o.accepted) + 1, 0);
      ++by_accepted_[static_cast<size_t>(o.accepted)];
      proposed += o.proposed;
      verified += o.verified;
      accepted += o.accepted;
    }
    if (r.first_token_s < 0) {
      r.first_token_s = time_s;
    } else {
      itl_s_.push_back(static_cast<float>(time_s - r.last_token_s));
    }
    r.last_token_s = time_s;
    r.output_tokens += o.tokens;
    if (o.finished) r.finish_s = time_s;
  }
  verifications_ = verifications;
  drafts_proposed_ = proposed;
  drafts_verified_ = verified;
  drafts_accepted_ = accepted;
}

double MetricsObserver::mean_acceptance_length() const {
  return verifications_ == 0 ? 0.0
                             : 1.0 + static_cast<double>(drafts_accepted_) /
                                         static_cast<double>(verifications_);
}

// vLLM's SpecDecodingLogging.log() (vllm/v1/spec_decode/metrics.py): accepted tokens at
// position k over the number of drafts (verifications that had drafts), k = 0 .. K-1.
std::vector<double> MetricsObserver::PerPositionAcceptanceRate() const {
  // Position k was accepted by the verifications that accepted more than k drafts; positions up
  // to the most drafts any verification accepted.
  const size_t positions = by_accepted_.empty() ? 0 : by_accepted_.size() - 1;
  std::vector<double> rates(positions);
  int64_t n = 0;
  for (size_t k = positions; k-- > 0;) {
    n += by_accepted_[k + 1];
    rates[k] = verifications_ > 0 ? static_cast<double>(n) / verifications_ : 0.0;
  }
  return rates;
}

SpeculativeCounts MetricsObserver::speculative() const {
  SpeculativeCounts c;
  c.mean_acceptance_length = mean_acceptance_length();
  c.verifications = verifications_;
  c.drafts_proposed = drafts_proposed_;
  c.drafts_verified = drafts_verified_;
  c.drafts_accepted = drafts_accepted_;
  c.acceptance_rate = drafts_verified_ > 0 ? static_cast<double>(drafts_accepted_) / drafts_verified_ : 0.0;
  c.per_position_acceptance_rate = PerPositionAcceptanceRate();
  return c;
}

absl::Status MetricsObserver::Finish(nlohmann::json* section) {
  ServingSamples samples;
  double first_submit = -1, last_finish = 0;
  for (size_t i = 0; i < requests_.size(); ++i) {
    const RequestRecord& r = requests_[i];
    if (r.finish_s < 0) {
      ++samples.failed;  // not finished: only in a run aborted by an error
      continue;
    }
    ++samples.completed;
    if (r.output_tokens != workload_[i].output_len)
      return absl::InternalError(absl::StrFormat(
          "metrics: request id %d emitted %d tokens, expected %d", workload_[i].id,
          r.output_tokens, workload_[i].output_len));
    samples.input_tokens += workload_[i].prompt_len;
    samples.output_tokens += r.output_tokens;
    if (first_submit < 0 || r.submit_s < first_submit) first_submit = r.submit_s;
    last_finish = std::max(last_finish, r.finish_s);
    samples.ttft_s.push_back(r.first_token_s - r.submit_s);
    samples.e2el_s.push_back(r.finish_s - r.submit_s);
    // vLLM's calculate_metrics(): TPOT over requests of > 1 token; 0 for goodput otherwise.
    const double tpot = r.output_tokens > 1 ? (r.finish_s - r.first_token_s) /
                                                  static_cast<double>(r.output_tokens - 1)
                                            : 0.0;
    if (r.output_tokens > 1) samples.tpot_s.push_back(tpot);
    samples.all_tpot_s.push_back(tpot);
  }
  samples.duration_s = samples.completed > 0 ? last_finish - first_submit : 0.0;
  samples.itl_s.assign(itl_s_.begin(), itl_s_.end());
  serving_ = ComputeServingResult(samples, result_spec_);
  // vllm/benchmarks/serve.py calculate_metrics(): the most chunks delivered in one second, and
  // the most requests in flight in one second (a request counts in every second from its
  // submission's to its finish's, both included), seconds from the first submission.
  // The most in flight in one second, as a sweep over the requests' first and last seconds
  // (memory and time by requests, not by simulated seconds).
  std::vector<std::pair<int64_t, int32_t>> edges;  // (second, +1 from it on / -1 after it)
  nlohmann::json latencies = nlohmann::json::array(), queue_times = nlohmann::json::array();
  for (size_t i = 0; i < requests_.size(); ++i) {
    const RequestRecord& r = requests_[i];
    if (r.finish_s < 0 || first_submit < 0) continue;
    const auto from = static_cast<int64_t>(r.submit_s - first_submit), to = static_cast<int64_t>(r.finish_s - first_submit);
    edges.push_back({from, +1});
    edges.push_back({to + 1, -1});
    latencies.push_back(r.finish_s - r.submit_s);
    queue_times.push_back(r.submit_s - workload_[i].arrival_s);
  }
  std::sort(edges.begin(), edges.end());  // at one second, -1 (the previous second's last) first
  int64_t in_flight = 0, max_in_flight = 0;
  for (const auto& [second, delta] : edges) max_in_flight = std::max(max_in_flight, in_flight += delta);
  int64_t max_chunks = 0;
  for (const auto& [second, chunks] : chunks_per_s_) max_chunks = std::max(max_chunks, chunks);
  serving_.max_output_tokens_per_s = static_cast<double>(max_chunks);
  serving_.max_concurrent_requests = max_in_flight;
  serving_.rtfx = 0.0;  // audio only
  serving_lists_ = {{"latencies", std::move(latencies)}, {"queue_times", std::move(queue_times)}};
  // vLLM's spec-decode keys (serve.py benchmark(), from the server's spec-decode counters), when
  // drafts were verified: the acceptance rate in percent, the length 1 + accepted / drafts.
  if (drafts_verified_ > 0) {
    SpecDecodeResult sd;
    sd.acceptance_rate = 100.0 * static_cast<double>(drafts_accepted_) / drafts_verified_;
    sd.acceptance_length = mean_acceptance_length();
    sd.num_drafts = verifications_;
    sd.draft_tokens = drafts_verified_;
    sd.accepted_tokens = drafts_accepted_;
    sd.per_position_acceptance_rates = PerPositionAcceptanceRate();
    serving_.spec_decode = std::move(sd);
  }
  const SpeculativeCounts spec = speculative();
  nlohmann::json& s = *section;
  s["preemptions"] = preemptions_;
  s["speculative"] = {{"mean_acceptance_length", spec.mean_acceptance_length},
                      {"verifications", spec.verifications},
                      {"drafts_proposed", spec.drafts_proposed},
                      {"drafts_verified", spec.drafts_verified},
                      {"drafts_accepted", spec.drafts_accepted},
                      {"acceptance_rate", spec.acceptance_rate},
                      {"per_position_acceptance_rate", spec.per_position_acceptance_rate}};
  // Per-step series, aggregated (in OnStep, over every step): how many steps of each case,
  // their batch sizes, and how many carried a stale host view.
  nlohmann::json cases = nlohmann::json::object();
  for (int c = 0; c < kNumStepCases; ++c) {
    if (case_steps_[c] == 0) continue;
    cases[std::string(StepCaseName(static_cast<StepCase>(c)))] = {
        {"steps", case_steps_[c]},
        {"host_view_stale_steps", case_stale_[c]},
        {"graph_padded_steps", case_padded_[c]},
        {"mean_requests", case_reqs_[c] / case_steps_[c]},
        {"mean_tokens", case_tokens_[c] / case_steps_[c]},
        {"time_s", case_time_s_[c]}};
  }
  const double n = total_steps_ == 0 ? 1.0 : static_cast<double>(total_steps_);
  s["steps"] = {{"total", total_steps_},
                {"mean_batch_requests", all_reqs_ / n},
                {"mean_batch_tokens", all_tokens_ / n},
                {"by_case", cases}};
  return absl::OkStatus();
}

const char* MetricsObserver::StepsCsvHeader() {
  return "step,start_s,duration_s,case,draft_step,graph_padded,host_view_stale,num_reqs_real,"
         "num_reqs,num_tokens_real,num_tokens,num_decodes,num_decode_tokens,num_prefills,"
         "num_prefill_tokens,draft_budget,eligible_drafts,gpu_us,host_us\n";
}

void MetricsObserver::AppendStepsCsvRow(const StepRecord& s, std::string* out) {
  absl::StrAppendFormat(out, "%d,%.9f,%.9f,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.3f,%.3f\n", s.index,
                        s.start_s, s.duration_s, StepCaseName(static_cast<StepCase>(s.step_case)), s.draft_step,
                        s.graph_padded, s.host_view_stale, s.num_reqs_real, s.num_reqs, s.num_tokens_real,
                        s.num_tokens, s.num_decodes, s.num_decode_tokens, s.num_prefills, s.num_prefill_tokens,
                        s.draft_budget, s.eligible_drafts, s.gpu_us, s.host_us);
}

std::string MetricsObserver::StepsCsv(int64_t stride) const {
  std::string out = StepsCsvHeader();
  out.reserve(out.size() + steps_.size() / static_cast<size_t>(std::max<int64_t>(stride, 1)) * 120);
  for (const StepRecord& s : steps_) {
    if (stride > 1 && s.index % stride != 0) continue;
    AppendStepsCsvRow(s, &out);
  }
  return out;
}

const char* MetricsObserver::RequestsCsvHeader() {
  return "id,arrival_s,submit_s,prompt_len,output_len,ttft_ms,tpot_ms,e2el_ms,finish_s,"
         "preemptions,verifications,drafts_verified,drafts_accepted,acceptance_length\n";
}

void MetricsObserver::AppendRequestsCsvRow(size_t i, std::string* out) const {
  const RequestRecord& r = requests_[i];
  const RequestSpec& w = workload_[i];
  const double tpot = r.output_tokens > 1 ? (r.finish_s - r.first_token_s) / (r.output_tokens - 1) : 0.0;
  const double al = r.verifications > 0 ? 1.0 + static_cast<double>(r.drafts_accepted) / r.verifications : 0.0;
  absl::StrAppendFormat(out, "%d,%.9f,%.9f,%d,%d,%.6f,%.6f,%.6f,%.9f,%d,%d,%d,%d,%.6f\n", w.id, w.arrival_s,
                        r.submit_s, w.prompt_len, w.output_len, (r.first_token_s - r.submit_s) * 1e3, tpot * 1e3,
                        (r.finish_s - r.submit_s) * 1e3, r.finish_s, r.preemptions, r.verifications,
                        r.drafts_verified, r.drafts_accepted, al);
}

std::string MetricsObserver::RequestsCsv() const {
  std::string out = RequestsCsvHeader();
  for (size_t i = 0; i < requests_.size(); ++i) AppendRequestsCsvRow(i, &out);
  return out;
}

}  // namespace dspark::sim
