// Scheduler::Plan: the next step's batch (target or draft step), the adaptive allocation of
// drafts, and the plan's summary fields (sim/model/scheduler.h gives the semantics).
#include "sim/model/scheduler.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "absl/strings/str_format.h"

namespace dspark::sim {

// Appends an entry field by field: push_back of a braced Entry built it on the stack and
// copied it with wider loads than its stores, a store-forwarding stall per request that
// was most of the planning passes' time.
void Scheduler::AddEntry(std::vector<Entry>* entries, int32_t req, int32_t q_dev, int32_t q_host,
                         int32_t seq_dev, int32_t seq_host, int32_t max_drafts, int32_t kept) {
  Entry& e = entries->emplace_back();
  e.req = req;
  e.q_dev = q_dev;
  e.q_host = q_host;
  e.seq_dev = seq_dev;
  e.seq_host = seq_host;
  e.max_drafts = max_drafts;
  e.kept = kept;
}

int32_t Scheduler::PrefillDraftReserve(const Req& r, int32_t seq) const {
  if (config_.mode != SpecMode::kAdaptive || seq < r.prefill_len || r.generated + 1 >= r.output_len) return seq;
  return seq + std::min(k_, config_.max_model_len - seq);
}

void Scheduler::PlanTarget(double now_s) {
  const bool adaptive = config_.mode == SpecMode::kAdaptive;
  int32_t budget = config_.max_num_batched_tokens;
  for (size_t i = 0; i < running_.size(); ++i) {
    const int32_t idx = running_[i];
    Req& r = reqs_[idx];
    if (r.phase == Phase::kPrefill) {
      const int32_t chunk = std::min(r.prefill_len - r.computed, budget);
      if (chunk <= 0) continue;
      const int32_t seq = r.computed + chunk;
      if (!EnsureBlocks(idx, PrefillDraftReserve(r, seq), now_s)) continue;
      AddEntry(&prefills_, idx, chunk, chunk, seq, seq, 0);
      budget -= chunk;
    } else if (r.phase == Phase::kDecode || r.phase == Phase::kNeedVerify) {
      if (budget < 1) continue;
      const int32_t maxd = r.phase == Phase::kDecode ? 0 : std::min(VerifyCap(r), budget - 1);
      const int32_t seq = r.computed + 1 + maxd;
      // Adaptive: also the draft after it, up to 1 + maxd positions past the host's bound seq.
      const int32_t reserve = adaptive ? seq + 1 + maxd : seq;
      if (!EnsureBlocks(idx, reserve, now_s)) continue;
      AddEntry(&decodes_, idx, 1 + maxd, 1 + maxd, seq, seq, maxd, maxd);
      budget -= 1 + maxd;
    }
  }
  // vLLM v1 admits no waiting request in a step that preempted one.
  if (!preempted_this_step_) AdmitWaiting(budget);
  if (adaptive && !decodes_.empty()) AllocateAdaptive();
}

void Scheduler::AdmitWaiting(int32_t budget) {
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
    const int32_t idx = waiting_.front();
    Req& r = reqs_[idx];
    const int32_t chunk = std::min(r.prefill_len - r.computed, budget);
    if (!kv_.Grow(r.blocks, PrefillDraftReserve(r, r.computed + chunk))) break;
    waiting_.pop_front();
    r.phase = Phase::kPrefill;
    running_.push_back(idx);
    const int32_t seq = r.computed + chunk;
    AddEntry(&prefills_, idx, chunk, chunk, seq, seq, 0);
    budget -= chunk;
  }
}

void Scheduler::AllocateAdaptive() {
  // vLLM's batch order (sort_batch_req_ids): rows with drafts first, K drafts before fewer,
  // then ascending tokens; stable, so ties keep the running order.
  const auto order_key = [k = k_](const Entry& e) {
    return std::make_tuple(e.max_drafts == 0, e.max_drafts != k, e.max_drafts);
  };
  for (size_t i = 1; i < decodes_.size(); ++i)
    if (order_key(decodes_[i]) < order_key(decodes_[i - 1])) {
      std::stable_sort(decodes_.begin(), decodes_.end(),
                       [&](const Entry& a, const Entry& b) { return order_key(a) < order_key(b); });
      break;
    }
  const int32_t nd = static_cast<int32_t>(decodes_.size());
  const size_t slots = static_cast<size_t>(nd) * k_;
  scores_dev_.resize(slots);
  scores_host_.resize(slots + kMaxSpecK);  // the staged (stale) confidences, row by row
  max_drafts_.resize(nd);
  kept_dev_.resize(nd);
  kept_host_.resize(nd);
  int32_t eligible = 0, non_draft = nd, sampling = nd;
  for (int32_t i = 0; i < nd; ++i) {
    const Req& r = reqs_[decodes_[i].req];
    SurvivalScores(r.conf.data(), k_, &scores_dev_[static_cast<size_t>(i) * k_]);
    // All kMaxSpecK of them (a fixed-size copy): the next row overwrites those past k_, the
    // last row's go to the padding.
    std::memcpy(&scores_host_[static_cast<size_t>(i) * k_], r.conf_host.data(), sizeof(r.conf_host));
    max_drafts_[i] = decodes_[i].max_drafts;
    eligible += decodes_[i].max_drafts;
  }
  for (const Entry& e : prefills_) {
    non_draft += e.q_dev;
    sampling += e.seq_dev >= reqs_[e.req].prefill_len;  // num_computed + non_draft >= prefill_len
  }
  if (eligible == 0) {  // no drafts scheduled: vLLM runs no adaptive verification
    draft_budget_ = 0;
    for (int32_t i = 0; i < nd; ++i) kept_dev_[i] = kept_host_[i] = 0;
    return;
  }
  BudgetInputs in{scores_host_.data(), max_drafts_.data(), nd, k_,
                  nd + static_cast<int32_t>(prefills_.size()), sampling, non_draft};
  in.max_total_logits = max_total_logits_;
  // The step runs non_draft + B tokens; FinishPlan pads that to a capture size as any step,
  // and the padding stays padding.
  const int32_t budget = ComputeDraftBudget(in, cost_tables_, &budget_scratch_);
  draft_budget_ = allocator_.Allocate(scores_dev_.data(), max_drafts_.data(), nd, k_, budget,
                                      kept_dev_.data());
  HostDraftSplit(max_drafts_.data(), nd, draft_budget_, kept_host_.data());
  const bool masked = config_.adaptive_mode == AdaptiveMode::kMasked;
  for (int32_t i = 0; i < nd; ++i) {
    Entry& e = decodes_[i];
    const int32_t c0 = reqs_[e.req].computed;
    e.kept = kept_dev_[i];
    if (masked) continue;  // layout as scheduled: 1 + max_drafts, the pruned slots are padding
    e.q_dev = 1 + kept_dev_[i];
    e.q_host = 1 + kept_host_[i];
    e.seq_dev = c0 + e.q_dev;
    e.seq_host = c0 + 1 + e.max_drafts;  // seq_lens_cpu_upper_bound is pre-compaction
  }
}

void Scheduler::PlanDraft(double now_s) {
  const bool adaptive = config_.mode == SpecMode::kAdaptive;
  int32_t kept_total = 0;
  for (size_t i = 0; i < running_.size(); ++i) {
    const int32_t idx = running_[i];
    Req& r = reqs_[idx];
    if (r.phase != Phase::kNeedDraft && r.phase != Phase::kZombie) continue;
    int32_t q_dev, q_host, need;
    if (adaptive && r.verified_last) {
      q_dev = 1 + r.last_kept_dev;
      q_host = 1 + r.last_kept_host;
      need = r.computed_host + 1 + r.last_maxd;
    } else {
      q_dev = q_host = std::min(k_, config_.max_model_len - r.computed_host);
      need = r.computed_host + q_dev;
    }
    if (!EnsureBlocks(idx, need, now_s)) continue;
    if (adaptive && r.verified_last) kept_total += r.last_kept_dev;
    AddEntry(&decodes_, idx, q_dev, q_host, r.computed + q_dev, r.computed_host + q_host, 0);
  }
  if (adaptive) draft_budget_ = kept_total;
}

void Scheduler::FinishPlan(StepPlan* plan) {
  const int32_t nd = static_cast<int32_t>(decodes_.size());
  const int32_t np = static_cast<int32_t>(prefills_.size());
  int32_t m = 0, decode_tokens = 0, prefill_tokens = 0, eligible = 0;
  int64_t sum_seq = 0;
  double pairs = 0.0;
  bool stale = false, all_full_prefills = true;
  for (const Entry& e : decodes_) {
    decode_tokens += e.q_dev;
    eligible += e.max_drafts;
    sum_seq += e.seq_dev;
    pairs += e.q_dev * (e.seq_dev - (e.q_dev - 1) * 0.5);
    stale |= e.q_dev != e.q_host || e.seq_dev != e.seq_host;
  }
  for (const Entry& e : prefills_) {
    prefill_tokens += e.q_dev;
    sum_seq += e.seq_dev;
    pairs += e.q_dev * (e.seq_dev - (e.q_dev - 1) * 0.5);
    all_full_prefills &= e.seq_dev == e.q_dev && e.seq_dev == reqs_[e.req].prefill_len;
  }
  m = decode_tokens + prefill_tokens;

  if (draft_step_) {
    case_ = config_.mode == SpecMode::kAdaptive ? StepCase::kAdaptiveDraft : StepCase::kSpecDraft;
  } else if (nd > 0 && np > 0) {
    case_ = StepCase::kMixed;
  } else if (nd > 0) {
    case_ = config_.mode == SpecMode::kNone     ? StepCase::kDecode
            : config_.mode == SpecMode::kDSpark ? StepCase::kSpecVerify
                                                : StepCase::kAdaptiveVerify;
  } else {
    case_ = all_full_prefills ? StepCase::kPrefill : StepCase::kChunkedPrefill;
  }

  const bool decode_only = np == 0;
  const bool padded = config_.cuda_graphs && decode_only && m > 0 && m <= max_capture_;
  num_tokens_padded_ =
      padded ? *std::lower_bound(capture_sizes_.begin(), capture_sizes_.end(), m) : m;
  int32_t q_uniform = 1 + k_;
  if (case_ == StepCase::kSpecDraft) q_uniform = k_;
  if (case_ == StepCase::kDecode) q_uniform = 1;
  num_reqs_padded_ = padded ? std::max(nd, num_tokens_padded_ / q_uniform) : nd + np;

  plan->step_case = case_;
  plan->draft_step = draft_step_;
  plan->graph_padded = padded;
  plan->host_view_stale = stale;
  plan->num_reqs_real = nd + np;
  plan->num_reqs = num_reqs_padded_;
  plan->num_tokens_real = m;
  plan->num_tokens = num_tokens_padded_;
  plan->num_decodes = decode_only ? num_reqs_padded_ : nd;
  plan->num_decode_tokens = decode_only ? num_tokens_padded_ : decode_tokens;
  plan->num_prefills = np;
  plan->num_prefill_tokens = prefill_tokens;
  plan->capacity = std::max(config_.max_num_batched_tokens, max_capture_);
  plan->bt_width = bt_width_;
  plan->bt_stride = bt_width_ + config_.bt_stride_pad;
  plan->draft_budget = draft_budget_;
  plan->eligible_drafts = eligible;
  plan->sum_seq_lens = sum_seq;
  plan->attn_pairs = pairs;
  plan->BindMaterializer(this, &arrays_);
}

absl::Status Scheduler::Plan(double now_s, StepPlan* plan) {
  decodes_.clear();
  prefills_.clear();
  draft_budget_ = -1;
  preempted_this_step_ = false;
  draft_step_ = false;
  if (config_.mode != SpecMode::kNone)
    for (int32_t idx : running_)
      if (reqs_[idx].phase == Phase::kNeedDraft || reqs_[idx].phase == Phase::kZombie) {
        draft_step_ = true;
        break;
      }
  if (draft_step_) {
    PlanDraft(now_s);
    if (decodes_.empty()) {  // every drafter was preempted
      draft_step_ = false;
      draft_budget_ = -1;
    }
  }
  if (!draft_step_) PlanTarget(now_s);
  if (decodes_.empty() && prefills_.empty()) {
    if (!waiting_.empty()) {
      const Req& head = reqs_[waiting_.front()];
      return absl::FailedPreconditionError(absl::StrFormat(
          "request id %d cannot be scheduled: its prefill of %d tokens needs %d KV blocks, the "
          "pool has %d free of %d (raise --num-kv-blocks or lower --max-model-len)",
          head.id, head.prefill_len, kv_.BlocksFor(head.prefill_len), kv_.num_free(),
          kv_.num_blocks() - 1));
    }
    return absl::InternalError("scheduler: work pending but nothing schedulable");
  }
  FinishPlan(plan);
  counters_.peak_running = std::max(counters_.peak_running, static_cast<int32_t>(running_.size()));
  counters_.peak_kv_blocks = std::max(counters_.peak_kv_blocks, kv_.num_used());
  return absl::OkStatus();
}


}  // namespace dspark::sim
