#include "sim/model/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/topb_alloc.cuh"
#include "sim/workload/input_file.h"

namespace dspark::sim {

absl::string_view SpecModeName(SpecMode mode) {
  switch (mode) {
    case SpecMode::kNone: return "none";
    case SpecMode::kDSpark: return "dspark";
    case SpecMode::kAdaptive: return "adaptive";
  }
  return "?";
}

absl::StatusOr<SpecMode> ParseSpecMode(absl::string_view name) {
  for (SpecMode m : {SpecMode::kNone, SpecMode::kDSpark, SpecMode::kAdaptive})
    if (name == SpecModeName(m)) return m;
  return absl::InvalidArgumentError(
      absl::StrCat("--mode: expected none, dspark or adaptive, got '", Abbreviate(name), "'"));
}

absl::string_view AdaptiveModeName(AdaptiveMode mode) {
  return mode == AdaptiveMode::kMasked ? "masked" : "varlen";
}

absl::StatusOr<AdaptiveMode> ParseAdaptiveMode(absl::string_view name) {
  for (AdaptiveMode m : {AdaptiveMode::kVarlen, AdaptiveMode::kMasked})
    if (name == AdaptiveModeName(m)) return m;
  return absl::InvalidArgumentError(
      absl::StrCat("--adaptive-mode: expected varlen or masked, got '", name, "'"));
}

namespace {

// The step-cost curves of the host budget: the time model's (calibration file's) when given,
// otherwise vLLM's source of them re-created from the forward model: graph timings of dummy
// batches at every capture size (context of one token per query token, no metadata: the
// builders run outside the model graphs), verify keyed by tokens and draft by requests
// (K query tokens each). Units: ms.
void CostCurves(const TimeModel& tm, const std::vector<int32_t>& capture_sizes, int32_t k,
                int32_t max_num_batched_tokens, CostCurve* draft, CostCurve* verify) {
  *draft = tm.params().draft_curve_ms;
  *verify = tm.params().verify_curve_ms;
  std::vector<int32_t> sizes = capture_sizes;
  if (sizes.empty()) sizes = {1, max_num_batched_tokens};
  if (verify->empty())
    for (int32_t n : sizes) verify->push_back({n, 1e-3 * tm.ForwardUs(false, n, n, n)});
  if (draft->empty()) {
    int32_t last = 0;
    for (int32_t n : sizes) {
      const int32_t r = std::max(1, n / (1 + k));
      if (r <= last) continue;
      draft->push_back({r, 1e-3 * tm.ForwardUs(true, r * k, static_cast<int64_t>(r) * k, 0.0)});
      last = r;
    }
  }
}

}  // namespace

int32_t AutoKvBlocks(const SchedulerConfig& c) {
  const int64_t per_req = (c.max_model_len + c.block_size - 1) / c.block_size;
  return static_cast<int32_t>(std::min<int64_t>(per_req * c.max_num_seqs + 1, 1 << 30));
}

Scheduler::Scheduler(const SchedulerConfig& config, const std::vector<RequestSpec>& workload,
                     const AcceptanceModel& acceptance, const TimeModel& time_model,
                     uint64_t seed)
    : config_(config),
      k_(config.mode == SpecMode::kNone ? 0 : config.spec_k),
      acceptance_(acceptance),
      time_model_(time_model),
      accept_rng_(seed, RngStream::kAcceptance),
      kv_(config.num_kv_blocks > 0 ? config.num_kv_blocks : AutoKvBlocks(config),
          config.block_size),
      allocator_(config.max_num_seqs * std::max(1, config.spec_k)) {
  capture_sizes_ = GraphCaptureSizes(config_.max_num_seqs, config_.max_num_batched_tokens, k_);
  max_capture_ = capture_sizes_.empty() ? 0 : capture_sizes_.back();
  bt_width_ = (config_.max_model_len + config_.block_size - 1) / config_.block_size;
  Rng jitter(seed, RngStream::kRequestJitter);
  reqs_.resize(workload.size());
  for (size_t i = 0; i < workload.size(); ++i) {
    Req& r = reqs_[i];
    r.id = workload[i].id;
    r.prompt_len = workload[i].prompt_len;
    r.output_len = workload[i].output_len;
    if (k_ > 0) {
      acceptance_.InitRequest(workload[i], jitter, r.p.data());
      if (config_.mode == SpecMode::kAdaptive) acceptance_.PrepareConfidences(r.p.data(), &r.shapes);
      ResetConfidences(r);
    }
  }
  if (config_.mode == SpecMode::kAdaptive) {
    CostCurve draft, verify;
    CostCurves(time_model_, capture_sizes_, k_, config_.max_num_batched_tokens, &draft, &verify);
    cost_tables_ = BuildCostTables(draft, verify, config_.max_num_seqs, config_.max_num_batched_tokens);
  }
  running_.reserve(static_cast<size_t>(config_.max_num_seqs) + 1);
  decodes_.reserve(static_cast<size_t>(config_.max_num_seqs));
  prefills_.reserve(static_cast<size_t>(config_.max_num_seqs));
  const size_t slots = static_cast<size_t>(config_.max_num_seqs) * std::max(1, k_);
  scores_dev_.reserve(slots);
  scores_host_.reserve(slots);
  max_drafts_.reserve(static_cast<size_t>(config_.max_num_seqs));
  kept_dev_.reserve(static_cast<size_t>(config_.max_num_seqs));
  kept_host_.reserve(static_cast<size_t>(config_.max_num_seqs));
}

void Scheduler::ResetConfidences(Req& r) const {
  for (int k = 0; k < k_; ++k) r.conf[k] = r.conf_host[k] = 1.0f;
}

void Scheduler::Submit(int32_t req) {
  Req& r = reqs_[req];
  ResetConfidences(r);
  r.phase = Phase::kWaiting;
  r.prefill_len = r.prompt_len;
  r.blocks.reserve(static_cast<size_t>(kv_.BlocksFor(r.prompt_len + r.output_len + 2 * k_ + 2)));
  waiting_.push_back(req);
}

int32_t Scheduler::VerifyCap(const Req& r) const {
  const int32_t c0 = r.computed;
  int32_t maxd = std::min({k_, r.num_drafts, r.output_len - r.generated - 1});
  if (config_.mode == SpecMode::kDSpark) {
    // Room for this verification and a full K-token draft after it.
    maxd = std::min(maxd, config_.max_model_len - c0 - 1 - k_);
  } else {
    // Room for this verification and an adaptive draft of up to 1 + maxd tokens after it.
    maxd = std::min(maxd, (config_.max_model_len - c0 - 2) / 2);
  }
  return std::max(0, maxd);
}

void Scheduler::Release(int32_t req) {
  Req& r = reqs_[req];
  kv_.Release(r.blocks);
  std::vector<int32_t>().swap(r.blocks);
  r.phase = Phase::kDone;
}

void Scheduler::Preempt(int32_t victim, double now_s) {
  running_.pop_back();
  Req& v = reqs_[victim];
  if (v.phase == Phase::kZombie) {
    Release(victim);  // already finished: it only loses its ride on the draft step
    return;
  }
  kv_.Release(v.blocks);
  v.computed = v.computed_host = 0;
  v.prefill_len = v.prompt_len + v.generated;
  v.num_drafts = 0;
  v.verified_last = false;
  ResetConfidences(v);  // re-added to the batch later: add_request again
  v.phase = Phase::kWaiting;
  waiting_.push_front(victim);
  ++counters_.preemptions;
  preempted_this_step_ = true;
  if (events_ != nullptr) events_->OnPreempted(victim, now_s);
}

bool Scheduler::EnsureBlocks(int32_t req, int32_t tokens, double now_s) {
  Req& r = reqs_[req];
  while (!kv_.Grow(r.blocks, tokens)) {
    const int32_t victim = running_.back();
    Preempt(victim, now_s);
    if (victim == req) return false;
  }
  return true;
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
      prefills_.push_back({idx, chunk, chunk, seq, seq, 0});
      budget -= chunk;
    } else if (r.phase == Phase::kDecode || r.phase == Phase::kNeedVerify) {
      if (budget < 1) continue;
      const int32_t maxd = r.phase == Phase::kDecode ? 0 : std::min(VerifyCap(r), budget - 1);
      const int32_t seq = r.computed + 1 + maxd;
      // Adaptive: also the draft after it, up to 1 + maxd positions past the host's bound seq.
      const int32_t reserve = adaptive ? seq + 1 + maxd : seq;
      if (!EnsureBlocks(idx, reserve, now_s)) continue;
      decodes_.push_back({idx, 1 + maxd, 1 + maxd, seq, seq, maxd, maxd});
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
    prefills_.push_back({idx, chunk, chunk, seq, seq, 0});
    budget -= chunk;
  }
}

void Scheduler::AllocateAdaptive() {
  const int32_t nd = static_cast<int32_t>(decodes_.size());
  const size_t slots = static_cast<size_t>(nd) * k_;
  scores_dev_.resize(slots);
  scores_host_.resize(slots);  // the staged (stale) confidences, row by row
  max_drafts_.resize(nd);
  kept_dev_.resize(nd);
  kept_host_.resize(nd);
  int32_t eligible = 0, non_draft = nd, sampling = nd;
  for (int32_t i = 0; i < nd; ++i) {
    const Req& r = reqs_[decodes_[i].req];
    SurvivalScores(r.conf.data(), k_, &scores_dev_[static_cast<size_t>(i) * k_]);
    std::copy(r.conf_host.begin(), r.conf_host.begin() + k_, &scores_host_[static_cast<size_t>(i) * k_]);
    max_drafts_[i] = decodes_[i].max_drafts;
    eligible += decodes_[i].max_drafts;
  }
  for (const Entry& e : prefills_) {
    non_draft += e.q_dev;
    sampling += e.seq_dev >= reqs_[e.req].prefill_len;  // num_computed + non_draft >= prefill_len
  }
  const BudgetInputs in{scores_host_.data(), max_drafts_.data(), nd, k_,
                        nd + static_cast<int32_t>(prefills_.size()), sampling, non_draft};
  int32_t budget = ComputeDraftBudget(in, cost_tables_, &budget_scratch_);
  const bool masked = config_.adaptive_mode == AdaptiveMode::kMasked;
  if (!masked) {
    // compact_batch gets the step's token count: padded up to a capture size when the step
    // is graph-padded (decode-only, as FinishPlan pads), so the padding becomes drafts.
    int32_t n = non_draft + budget;
    if (config_.cuda_graphs && prefills_.empty() && n <= max_capture_)
      n = *std::lower_bound(capture_sizes_.begin(), capture_sizes_.end(), n);
    budget = std::min(eligible, n - non_draft);
  }
  draft_budget_ = allocator_.Allocate(scores_dev_.data(), max_drafts_.data(), nd, k_, budget,
                                      kept_dev_.data());
  EvenDraftSplit(max_drafts_.data(), nd, draft_budget_, kept_host_.data());
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
    decodes_.push_back({idx, q_dev, q_host, r.computed + q_dev, r.computed_host + q_host, 0});
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

void Scheduler::CompactRunning() {
  size_t out = 0;
  for (size_t i = 0; i < running_.size(); ++i)
    if (reqs_[running_[i]].phase != Phase::kDone) running_[out++] = running_[i];
  running_.resize(out);
}

void Scheduler::Commit(double end_s) {
  ++counters_.steps;
  const bool spec = config_.mode != SpecMode::kNone;
  const bool adaptive = config_.mode == SpecMode::kAdaptive;
  if (draft_step_) {
    for (const Entry& e : decodes_) {
      Req& r = reqs_[e.req];
      if (r.phase == Phase::kZombie) {
        Release(e.req);
        continue;
      }
      const int32_t drafts = adaptive ? k_ : e.q_dev;
      if (adaptive) {
        // stage_confidences: the host's copy moves one round on, the device gets fresh ones.
        r.conf_host = r.conf;
        r.latent_accept = acceptance_.DrawWithConfidences(r.p.data(), r.shapes, drafts, accept_rng_,
                                                          r.conf.data());
      } else {
        r.latent_accept = AcceptanceModel::DrawAcceptedPrefix(r.p.data(), drafts, accept_rng_);
      }
      r.num_drafts = drafts;
      r.computed_host = r.computed;
      r.phase = Phase::kNeedVerify;
    }
    CompactRunning();
    return;
  }
  for (const Entry& e : decodes_) {
    Req& r = reqs_[e.req];
    int32_t emitted = 1;
    if (!spec) {
      r.computed += 1;
      r.computed_host = r.computed;
    } else {
      const int32_t verified = e.kept;
      const int32_t accepted = std::min(r.latent_accept, verified);
      if (events_ != nullptr) events_->OnVerification(e.req, r.num_drafts, verified, accepted);
      const int32_t c0 = r.computed;
      r.computed = c0 + 1 + accepted;
      r.computed_host = c0 + 1 + e.max_drafts;
      r.last_maxd = e.max_drafts;
      // The draft after it re-encodes the verified layout: compacted (varlen) or as
      // scheduled (masked, and every non-adaptive mode).
      r.last_kept_dev = e.q_dev - 1;
      r.last_kept_host = e.q_host - 1;
      r.verified_last = true;
      r.num_drafts = 0;
      emitted = 1 + accepted;
    }
    r.generated += emitted;
    if (events_ != nullptr) events_->OnTokens(e.req, end_s, emitted);
    if (r.generated >= r.output_len) {
      if (events_ != nullptr) events_->OnFinished(e.req, end_s);
      if (spec) r.phase = Phase::kZombie; else Release(e.req);
    } else {
      r.phase = spec ? Phase::kNeedDraft : Phase::kDecode;
    }
  }
  for (const Entry& e : prefills_) {
    Req& r = reqs_[e.req];
    r.computed = e.seq_dev;
    r.computed_host = r.computed;
    if (r.computed < r.prefill_len) continue;
    r.generated += 1;
    r.verified_last = false;
    if (events_ != nullptr) events_->OnTokens(e.req, end_s, 1);
    if (r.generated >= r.output_len) {
      if (events_ != nullptr) events_->OnFinished(e.req, end_s);
      Release(e.req);
    } else {
      r.phase = spec ? Phase::kNeedDraft : Phase::kDecode;
    }
  }
  CompactRunning();
}

absl::Status Scheduler::CheckKvConsistency() const {
  std::vector<const std::vector<int32_t>*> held;
  for (const Req& r : reqs_)
    if (!r.blocks.empty()) {
      if (r.phase != Phase::kPrefill && r.phase != Phase::kDecode && r.phase != Phase::kNeedDraft &&
          r.phase != Phase::kNeedVerify && r.phase != Phase::kZombie)
        return absl::InternalError(absl::StrFormat(
            "kv: request id %d holds %d blocks but is not running", r.id, r.blocks.size()));
      held.push_back(&r.blocks);
    }
  return kv_.CheckConsistency(held);
}

absl::Status Scheduler::Materialize(const StepPlan& plan, StepArrays* out) const {
  const int32_t r_total = plan.num_reqs, r_real = plan.num_reqs_real, n = plan.num_tokens;
  const int32_t stride = plan.bt_stride, width = plan.bt_width, bs = config_.block_size;
  out->qsl_device.assign(static_cast<size_t>(r_total) + 1, 0);
  out->qsl_host.assign(static_cast<size_t>(r_total) + 1, 0);
  out->seq_lens_device.assign(static_cast<size_t>(r_total), 0);
  out->seq_lens_host.assign(static_cast<size_t>(r_total), 0);
  out->block_table.assign(static_cast<size_t>(r_total) * stride, 0);
  out->slot_mapping.assign(static_cast<size_t>(n), -1);
  out->request_ids.assign(static_cast<size_t>(r_real), 0);
  out->topb.present = false;
  for (int32_t row = 0; row < r_total; ++row)
    for (int32_t c = width; c < stride; ++c) out->block_table[static_cast<size_t>(row) * stride + c] = -1;

  int32_t row = 0;
  auto emit = [&](const Entry& e) -> absl::Status {
    const Req& r = reqs_[e.req];
    out->request_ids[row] = r.id;
    out->qsl_device[row + 1] = out->qsl_device[row] + e.q_dev;
    out->qsl_host[row + 1] = out->qsl_host[row] + e.q_host;
    out->seq_lens_device[row] = e.seq_dev;
    out->seq_lens_host[row] = e.seq_host;
    const int32_t nblocks = static_cast<int32_t>(r.blocks.size());
    if (nblocks > width)
      return absl::InternalError(absl::StrFormat("step %d: request id %d holds %d blocks > width %d",
                                                 plan.index, r.id, nblocks, width));
    int32_t* bt_row = &out->block_table[static_cast<size_t>(row) * stride];
    for (int32_t b = 0; b < nblocks; ++b) bt_row[b] = r.blocks[b];
    const int32_t first_pos = e.seq_dev - e.q_dev;
    for (int32_t j = 0; j < e.q_dev; ++j) {
      const int32_t pos = first_pos + j;
      if (pos / bs >= nblocks)
        return absl::InternalError(absl::StrFormat(
            "step %d: request id %d position %d has no KV block (holds %d)", plan.index, r.id, pos, nblocks));
      out->slot_mapping[out->qsl_device[row] + j] =
          static_cast<int64_t>(r.blocks[pos / bs]) * bs + pos % bs;
    }
    ++row;
    return absl::OkStatus();
  };
  for (const Entry& e : decodes_)
    if (auto s = emit(e); !s.ok()) return s;
  for (const Entry& e : prefills_)
    if (auto s = emit(e); !s.ok()) return s;
  for (int32_t pad = r_real; pad < r_total; ++pad) {
    out->qsl_device[pad + 1] = out->qsl_device[pad];
    out->qsl_host[pad + 1] = out->qsl_host[pad];
  }

  // The device boundaries of an adaptive verification are what the allocation kernel writes:
  // run its body (CPU emulation) and require the fast planning path to agree exactly.
  // Skipped, as compact_batch is, when B covers every draft; masked mode never rewrites them.
  const bool compacts = !draft_step_ && config_.mode == SpecMode::kAdaptive &&
                        config_.adaptive_mode == AdaptiveMode::kVarlen && !decodes_.empty() &&
                        draft_budget_ < plan.eligible_drafts;
  if (compacts) {
    const int32_t nd = static_cast<int32_t>(decodes_.size());
    std::vector<int32_t> tail(static_cast<size_t>(r_total - nd), 0);
    int32_t offset = 0;
    for (int32_t j = 0; j < r_total - nd; ++j) {
      if (j < static_cast<int32_t>(prefills_.size())) offset += prefills_[j].q_dev;
      tail[j] = offset;
    }
    std::vector<int32_t> qsl(static_cast<size_t>(r_total) + 1, -99), kept(nd, -99),
        cu(static_cast<size_t>(r_real) + 1, -99);
    TopBAllocParams p{scores_dev_.data(), max_drafts_.data(), tail.empty() ? nullptr : tail.data(),
                      qsl.data(), kept.data(), nd, r_total, k_, draft_budget_, 1};
    p.cu_num_logits = cu.data();
    p.num_logit_reqs = r_real;
    if (auto s = CanImplementTopBAlloc(p); !s.ok()) return s;
    EmulateTopBAlloc(p);
    if (qsl != out->qsl_device)
      return absl::InternalError(absl::StrFormat(
          "step %d: emulated topb_alloc kernel wrote qsl [%s], the planned device view is [%s]",
          plan.index, absl::StrJoin(qsl, ","), absl::StrJoin(out->qsl_device, ",")));
    // compact_batch's cu_num_logits: the planned kept drafts plus one bonus token per request.
    std::vector<int32_t> planned_cu(1, 0);
    for (const Entry& e : decodes_) planned_cu.push_back(planned_cu.back() + e.kept + 1);
    for (size_t j = 0; j < prefills_.size(); ++j) planned_cu.push_back(planned_cu.back() + 1);
    if (cu != planned_cu)
      return absl::InternalError(absl::StrFormat(
          "step %d: emulated topb_alloc kernel wrote cu_num_logits [%s], the plan has [%s]", plan.index,
          absl::StrJoin(cu, ","), absl::StrJoin(planned_cu, ",")));
    TopBInputs& topb = out->topb;
    topb.present = true;
    topb.scores.assign(scores_dev_.begin(), scores_dev_.begin() + static_cast<size_t>(nd) * k_);
    topb.max_drafts.assign(max_drafts_.begin(), max_drafts_.begin() + nd);
    topb.tail_offsets = std::move(tail);
    topb.num_decodes = nd;
    topb.max_k = k_;
    topb.budget = draft_budget_;
    topb.base_tokens = 1;
  }
  return absl::OkStatus();
}

}  // namespace dspark::sim
