#include "sim/observe/invariants.h"

#include <algorithm>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/engine/engine.h"
#include "sim/observe/invariants_internal.h"

namespace dspark::sim {

using namespace invariants_internal;

std::vector<int32_t> DesignCaptureSizes(int32_t max_num_seqs, int32_t max_num_batched_tokens,
                                        int32_t spec_k) {
  const int32_t q = 1 + spec_k;
  const int32_t top = std::min(max_num_seqs * q * 2, 512);
  std::vector<int32_t> listed = {1, 2, 4};
  for (int32_t s = 8; s < 256; s += 8) listed.push_back(s);
  for (int32_t s = 256; s <= top; s += 16) listed.push_back(s);
  std::set<int32_t> sizes;
  for (int32_t s : listed) {
    if (s > top) continue;
    const int32_t rounded = spec_k > 0 ? (s + q - 1) / q * q : s;
    if (rounded <= max_num_batched_tokens) sizes.insert(rounded);
  }
  return std::vector<int32_t>(sizes.begin(), sizes.end());
}

InvariantChecker::InvariantChecker(const SchedulerConfig& config, InvariantOptions options)
    : config_(config),
      options_(options),
      k_(config.mode == SpecMode::kNone ? 0 : config.spec_k),
      capture_sizes_(DesignCaptureSizes(config.max_num_seqs, config.max_num_batched_tokens, k_)) {
  options_.kv_every = std::max<int64_t>(options_.kv_every, 1);
  options_.rows_every = std::max<int64_t>(options_.rows_every, 0);
}

void InvariantChecker::Reset(const std::vector<RequestSpec>& workload) {
  workload_ = &workload;
  state_.assign(workload.size(), ReqState::kPending);
  emitted_.assign(workload.size(), 0);
  finished_step_.assign(workload.size(), -1);
  finished_count_ = 0;
  preempted_while_planning_ = -1;
  last_index_ = -1;
  last_end_s_ = 0.0;
  last_start_s_ = 0.0;
}

void InvariantChecker::OnStart(const Engine& engine) {
  Reset(engine.workload());
  scheduler_ = &engine.scheduler();
}

void InvariantChecker::Keep(absl::Status violation) {
  if (violation.ok()) return;
  if (violations_++ == 0) first_ = std::move(violation);
}

absl::Status InvariantChecker::Record(absl::Status violation) {
  const absl::Status returned = options_.stop_on_violation ? violation : absl::OkStatus();
  Keep(std::move(violation));
  return returned;
}

void InvariantChecker::FillKvView() {
  const KvCache& kv = scheduler_->kv();
  view_.num_blocks = kv.num_blocks();
  view_.free_blocks = &kv.free_blocks();
  view_.holders.clear();
  for (int32_t req : scheduler_->running())
    view_.holders.push_back({scheduler_->request_id(req), &scheduler_->blocks_of(req)});
}

absl::Status InvariantChecker::OnStep(const StepPlan& plan) {
  // A violation seen in a request event stops the run at the next step.
  if (!ok() && options_.stop_on_violation) return first_;
  ++steps_checked_;
  absl::Status s;
  if (plan.index != last_index_ + 1) {
    s = Violation(plan.index, "step index %d follows %d", plan.index, last_index_);
  } else if (plan.start_s < last_start_s_ || plan.end_s < last_end_s_ || plan.end_s < plan.start_s) {
    // Async scheduling overlaps a step's host work with the previous step's GPU work, so a step
    // may start before the previous one ended; starts and ends each keep their order.
    s = Violation(plan.index, "start_s = %.9f, end_s = %.9f; the previous step started at %.9f and ended at %.9f",
                  plan.start_s, plan.end_s, last_start_s_, last_end_s_);
  }
  if (s.ok() && plan.step_case == StepCase::kAdaptiveDraft && preempted_while_planning_ >= 0)
    s = Violation(plan.index,
                  "request id %d preempted while an adaptive draft step was planned (the host cannot know the "
                  "step's token total without the dropped request's kept-draft count)",
                  preempted_while_planning_);
  preempted_while_planning_ = -1;
  last_index_ = plan.index;
  last_end_s_ = plan.end_s;
  last_start_s_ = plan.start_s;
  if (s.ok()) s = CheckPlan(plan);
  if (s.ok() && scheduler_ != nullptr) {
    const bool kv_now = plan.index % options_.kv_every == 0;
    const bool rows_now = options_.rows_every > 0 && plan.index % options_.rows_every == 0;
    if (kv_now || rows_now) FillKvView();
    if (kv_now) {
      ++kv_checks_;
      s = CheckKv(plan.index, view_);
    }
    if (s.ok() && rows_now) {
      ++row_checks_;
      auto arrays = plan.Arrays();
      s = arrays.ok() ? CheckRows(plan, **arrays, view_) : arrays.status();
    }
  }
  return Record(std::move(s));
}

void InvariantChecker::OnArrival(int32_t req, double /*time_s*/) {
  const int64_t step = last_index_ + 1;
  if (req < 0 || static_cast<size_t>(req) >= state_.size()) {
    Keep(Violation(step, "arrival of request index %d outside the workload of %d", req, state_.size()));
    return;
  }
  if (state_[req] != ReqState::kPending) {
    Keep(Violation(step, "request id %d submitted twice", (*workload_)[req].id));
    return;
  }
  state_[req] = ReqState::kSubmitted;
}

void InvariantChecker::OnTokens(int32_t req, double /*time_s*/, int32_t tokens) {
  const int64_t step = last_index_;
  if (req < 0 || static_cast<size_t>(req) >= state_.size()) {
    Keep(Violation(step, "tokens for request index %d outside the workload of %d", req, state_.size()));
    return;
  }
  const RequestSpec& spec = (*workload_)[req];
  if (state_[req] != ReqState::kSubmitted) {
    Keep(Violation(step, "request id %d emitted %d tokens while %s", spec.id, tokens,
                     state_[req] == ReqState::kPending ? "not submitted" : "finished"));
    return;
  }
  emitted_[req] += tokens;
  if (tokens < 1 || emitted_[req] > spec.output_len)
    Keep(Violation(step, "request id %d emitted %d tokens (%d in all), output_len = %d", spec.id, tokens,
                     emitted_[req], spec.output_len));
}

void InvariantChecker::OnFinished(int32_t req, double /*time_s*/) {
  const int64_t step = last_index_;
  if (req < 0 || static_cast<size_t>(req) >= state_.size()) {
    Keep(Violation(step, "finish of request index %d outside the workload of %d", req, state_.size()));
    return;
  }
  const RequestSpec& spec = (*workload_)[req];
  if (state_[req] == ReqState::kFinished) {
    Keep(Violation(step, "request id %d finished twice (first at step %d)", spec.id, finished_step_[req]));
    return;
  }
  if (state_[req] == ReqState::kPending) {
    Keep(Violation(step, "request id %d finished without being submitted", spec.id));
    return;
  }
  state_[req] = ReqState::kFinished;
  finished_step_[req] = step;
  ++finished_count_;
  if (emitted_[req] != spec.output_len)
    Keep(Violation(step, "request id %d finished with %d tokens, output_len = %d", spec.id, emitted_[req],
                     spec.output_len));
}

void InvariantChecker::OnPreempted(int32_t req, double /*time_s*/) {
  const int64_t step = last_index_ + 1;  // preemptions happen while the next step is planned
  if (req < 0 || static_cast<size_t>(req) >= state_.size()) {
    Keep(Violation(step, "preemption of request index %d outside the workload of %d", req, state_.size()));
    return;
  }
  if (state_[req] != ReqState::kSubmitted) {
    Keep(Violation(step, "request id %d preempted while %s", (*workload_)[req].id,
                   state_[req] == ReqState::kPending ? "not submitted" : "finished"));
    return;
  }
  if (preempted_while_planning_ < 0) preempted_while_planning_ = (*workload_)[req].id;
}

absl::Status InvariantChecker::CheckAllFinished() const {
  const int64_t step = last_index_;
  for (size_t i = 0; i < state_.size(); ++i)
    if (state_[i] != ReqState::kFinished)
      return Violation(step, "end of run: request id %d never finished (%d of %d requests finished)",
                       (*workload_)[i].id, finished_count_, state_.size());
  if (finished_count_ != static_cast<int64_t>(state_.size()))
    return Violation(step, "end of run: %d finishes for %d requests", finished_count_, state_.size());
  return absl::OkStatus();
}

absl::Status InvariantChecker::CheckEndOfRun(const KvView& view) {
  const int64_t step = last_index_;
  if (absl::Status s = CheckAllFinished(); !s.ok()) return s;
  for (const KvView::Holder& h : view.holders)
    if (!h.blocks->empty())
      return Violation(step, "end of run: request id %d still holds %d KV blocks", h.request_id, h.blocks->size());
  if (!view.holders.empty())
    return Violation(step, "end of run: %d requests still running", view.holders.size());
  return CheckKv(step, view);
}

absl::Status InvariantChecker::Finish(nlohmann::json* section) {
  if (scheduler_ != nullptr) {
    FillKvView();
    Keep(CheckEndOfRun(view_));
  } else {
    Keep(CheckAllFinished());
  }
  nlohmann::json& out = *section;
  out["ok"] = ok();
  out["violations"] = violations_;
  out["first_violation"] = ok() ? nlohmann::json(nullptr) : nlohmann::json(std::string(first_.message()));
  out["steps_checked"] = steps_checked_;
  out["kv_checks"] = kv_checks_;
  out["row_checks"] = row_checks_;
  out["requests_finished"] = finished_count_;
  return first_;
}

}  // namespace dspark::sim