#include "sim/observe/av_dump.h"

#include <vector>

#include "nlohmann/json.hpp"
#include "sim/engine/engine.h"
#include "sim/model/adaptive.h"
#include "sim/model/spec_mode.h"

namespace dspark::sim {
namespace {

nlohmann::json CurveJson(const CostCurve& curve) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [size, ms] : curve) j.push_back({size, ms});
  return j;
}

// float32 values as float64 numbers: exact, and read back to the same float32.
std::vector<double> Widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace

void AvDumpObserver::OnStart(const Engine& engine) {
  scheduler_ = &engine.scheduler();
  const SchedulerConfig& c = scheduler_->config();
  const nlohmann::json header = {
      {"kind", "header"},
      {"av_release", AvReleaseName(c.av_release)},
      {"adaptive_mode", std::string(AdaptiveModeName(c.adaptive_mode))},
      {"spec_k", c.spec_k},
      {"vocab_size", c.vocab_size},
      {"max_total_logits", MaxChunkLogits(c.vocab_size)},
      {"num_bonus_tokens", 1},
      {"max_num_reqs", c.max_num_seqs},
      {"max_num_batched_tokens", c.max_num_batched_tokens},
      {"cudagraph_limit", scheduler_->cost_cudagraph_limit()},
      {"draft_curve", CurveJson(scheduler_->draft_cost_curve())},
      {"verify_curve", CurveJson(scheduler_->verify_cost_curve())},
      {"draft_ms", scheduler_->cost_tables().draft_ms},
      {"verify_ms", scheduler_->cost_tables().verify_ms},
  };
  text_ += header.dump();
  text_ += '\n';
}

absl::Status AvDumpObserver::OnStep(const StepPlan& plan) {
  if (scheduler_ == nullptr || (max_steps_ > 0 && plan.index >= max_steps_)) return absl::OkStatus();
  auto recorded = scheduler_->RecordAdaptiveStep(plan, &record_);
  if (!recorded.ok()) return recorded.status();
  if (!*recorded) return absl::OkStatus();
  const AvStepRecord& r = record_;
  const nlohmann::json line = {
      {"kind", "step"},
      {"step", plan.index},
      {"num_reqs", r.num_reqs},
      {"num_reqs_padded", r.num_reqs_padded},
      {"num_tokens_padded", plan.num_tokens},
      {"scheduled_tokens", r.scheduled_tokens},
      {"drafts", r.drafts},
      {"num_computed", r.num_computed},
      {"prefill_len", r.prefill_len},
      {"stale_conf", Widen(r.stale_conf)},
      {"fresh_conf", Widen(r.fresh_conf)},
      {"budget", r.budget},
      {"host_tokens", r.host_tokens},
      {"device_drafts", r.device_drafts},
      {"qsl_device", r.qsl_device},
      {"cu_num_logits", r.cu_num_logits},
  };
  text_ += line.dump();
  text_ += '\n';
  return absl::OkStatus();
}

}  // namespace dspark::sim
