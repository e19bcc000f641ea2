// The soak's observers (sim/studies/soak.cc): the digest of everything a run decides, the RSS
// sampler and the progress meter. Not part of the soak's interface (soak.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "sim/engine/step_observer.h"
#include "sim/observe/progress.h"
#include "sim/studies/soak.h"
#include "sim/workload/rng.h"

namespace dspark::sim::soak_internal {

uint64_t Bits(double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof(u));
  return u;
}

uint64_t BatchSeed(uint64_t seed, int64_t batch) {
  return SplitMix64(SplitMix64(seed) + static_cast<uint64_t>(batch));
}

// Hashes everything the simulation decides: each plan's summary, each request event, and the
// batch's metrics summary. Times enter as IEEE bits, so any difference in the last bit shows.
class DigestObserver final : public StepObserver {
 public:
  absl::string_view name() const override { return "digest"; }
  absl::Status OnStep(const StepPlan& p) override {
    Mix(1);
    Mix(static_cast<uint64_t>(p.index));
    Mix(Bits(p.start_s));
    Mix(Bits(p.end_s));
    Mix(Bits(p.gpu_us));
    Mix(Bits(p.host_us));
    Mix(static_cast<uint64_t>(p.step_case) | uint64_t{p.draft_step} << 8 | uint64_t{p.graph_padded} << 9 |
        uint64_t{p.host_view_stale} << 10);
    for (int32_t v : {p.num_reqs_real, p.num_reqs, p.num_tokens_real, p.num_tokens, p.num_decodes,
                      p.num_decode_tokens, p.num_prefills, p.num_prefill_tokens, p.capacity, p.bt_width,
                      p.bt_stride, p.draft_budget, p.eligible_drafts})
      Mix(static_cast<uint64_t>(static_cast<uint32_t>(v)));
    Mix(static_cast<uint64_t>(p.sum_seq_lens));
    Mix(Bits(p.attn_pairs));
    return absl::OkStatus();
  }
  void OnArrival(int32_t req, double time_s) override { Event(2, req, Bits(time_s)); }
  void OnTokens(int32_t req, double time_s, int32_t tokens) override {
    Event(3, req, Bits(time_s));
    Mix(static_cast<uint64_t>(tokens));
  }
  void OnVerification(int32_t req, int32_t proposed, int32_t verified, int32_t accepted) override {
    Event(4, req, static_cast<uint64_t>(proposed) | static_cast<uint64_t>(verified) << 16 |
                      static_cast<uint64_t>(accepted) << 32);
  }
  void OnFinished(int32_t req, double time_s) override { Event(5, req, Bits(time_s)); }
  void OnPreempted(int32_t req, double time_s) override { Event(6, req, Bits(time_s)); }

  void MixText(const std::string& text) {
    Mix(7);
    Mix(text.size());
    for (unsigned char ch : text) Mix(ch);
  }
  uint64_t value() const { return h_; }

 private:
  void Mix(uint64_t word) { h_ = SplitMix64(h_ ^ word); }
  void Event(uint64_t tag, int32_t req, uint64_t payload) {
    Mix(tag);
    Mix(static_cast<uint64_t>(static_cast<uint32_t>(req)));
    Mix(payload);
  }
  uint64_t h_ = 0x736f616b64696765ULL;
};

// Samples VmRSS every `every` steps over both runs (a global step count), exactly at the
// warm-up mark, and when RunOnce asks (at the end of every batch). Halves the series (and doubles the period) when it
// reaches kMaxRssSamples, so that its own memory stays bounded.
class RssSampler final : public StepObserver {
 public:
  RssSampler(int64_t every, int64_t warmup_step, SoakResult* result)
      : every_(every), warmup_step_(warmup_step), result_(result) {}
  absl::string_view name() const override { return "rss"; }
  absl::Status OnStep(const StepPlan& /*plan*/) override {
    ++global_;
    if (global_ == warmup_step_ || global_ % every_ == 0) return Sample();
    return absl::OkStatus();
  }
  absl::Status Sample() {
    DS_ASSIGN_OR_RETURN(const int64_t kib, ReadVmRssKiB());
    if (global_ <= warmup_step_) {
      result_->rss_warmup_peak_kib = std::max(result_->rss_warmup_peak_kib, kib);
      if (global_ == warmup_step_) {
        result_->rss_at_warmup_kib = kib;
        baseline_taken_ = true;
      }
    } else {
      max_after_warmup_ = std::max(max_after_warmup_, kib);
    }
    result_->rss_max_kib = std::max(result_->rss_max_kib, kib);
    std::vector<RssSample>& s = result_->rss;
    if (!s.empty() && s.back().step == global_) return absl::OkStatus();
    s.push_back({global_, kib});
    if (s.size() >= kMaxRssSamples) {
      size_t out = 0;
      for (size_t i = 0; i < s.size(); i += 2) s[out++] = s[i];
      s.resize(out);
      every_ *= 2;
    }
    return absl::OkStatus();
  }
  int64_t global() const { return global_; }
  bool baseline_taken() const { return baseline_taken_; }
  int64_t max_after_warmup() const { return max_after_warmup_; }

 private:
  int64_t every_;
  int64_t warmup_step_;
  SoakResult* result_;
  int64_t global_ = 0;
  bool baseline_taken_ = false;
  int64_t max_after_warmup_ = 0;
};


// Steps of a soak run on its meter, across its batches (each batch is an engine of its own).
class SoakProgress final : public StepObserver {
 public:
  SoakProgress(ProgressMeter* meter, int64_t steps_before) : meter_(meter), steps_(steps_before) {}
  absl::string_view name() const override { return "progress"; }
  absl::Status OnStep(const StepPlan& /*plan*/) override {
    ++steps_;
    if (meter_->style() != ProgressStyle::kNone && (steps_ & 255) == 0) meter_->Update(steps_, Rate());
    return absl::OkStatus();
  }
  std::string Rate() const {
    const double elapsed = meter_->Elapsed();
    return absl::StrFormat("%.0f steps/s", elapsed > 0 ? static_cast<double>(steps_) / elapsed : 0.0);
  }

 private:
  ProgressMeter* meter_;
  int64_t steps_;
};

// One run: batches until `options.steps` steps. Check failures go into run->first_violation

}  // namespace dspark::sim::soak_internal
