// The scheduler's requests from submission to release: construction, admission state, KV
// growth and preemption, and Commit (a step's outcome). Planning: scheduler_plan.cc; the
// step's arrays: scheduler_arrays.cc.
#include "sim/model/scheduler.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace dspark::sim {

namespace {

// The step-cost curves of the host budget: the time model's (calibration file's) when given,
// otherwise vLLM's source of them re-created from the forward model: graph timings of dummy
// batches at the sizes vLLM profiles (CostProfileSizes: every capture size, then the tail
// sizes up to max_num_batched_tokens), context of one token per query token, no metadata (the
// builders run outside the model graphs); verify keyed by tokens at every size, draft by
// requests (K query tokens each) at the capture sizes only (vLLM prices the draft curve with
// full-graph replays alone). Units: ms. The dummy tokens are all alike
// (CudaGraphManager.capture_graph runs on the input buffers as they are before any request,
// and prepare_inputs_to_capture sets seq_lens = 1, so each token attends to itself alone): the
// router sends every one to the same k experts, hence routed_tokens = 1.
void CostCurves(const TimeModel& tm, const std::vector<int32_t>& capture_sizes, int32_t k,
                int32_t max_num_batched_tokens, CostCurve* draft, CostCurve* verify) {
  *draft = tm.params().draft_curve_ms;
  *verify = tm.params().verify_curve_ms;
  std::vector<int32_t> captures = capture_sizes;
  if (captures.empty()) captures = {1, max_num_batched_tokens};
  if (verify->empty())
    for (int32_t n : CostProfileSizes(captures, max_num_batched_tokens))
      verify->push_back({n, 1e-3 * tm.ForwardUs(false, n, n, n, 1)});
  if (draft->empty()) {
    int32_t last = 0;
    for (int32_t n : captures) {
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
  if (config_.mode == SpecMode::kAdaptive && k_ > 0) shapes_.resize(workload.size());
  for (size_t i = 0; i < workload.size(); ++i) {
    Req& r = reqs_[i];
    r.id = workload[i].id;
    r.prompt_len = workload[i].prompt_len;
    r.output_len = workload[i].output_len;
    if (k_ > 0) {
      acceptance_.InitRequest(workload[i], jitter, r.p.data());
      if (config_.mode == SpecMode::kAdaptive) acceptance_.PrepareConfidences(r.p.data(), &shapes_[i]);
      ResetConfidences(r);
    }
  }
  if (config_.mode == SpecMode::kAdaptive) {
    CostCurves(time_model_, capture_sizes_, k_, config_.max_num_batched_tokens, &draft_curve_,
               &verify_curve_);
    // vLLM's limit is its largest capture size; without CUDA graphs nothing pads.
    cost_cudagraph_limit_ = config_.cuda_graphs ? max_capture_ : 0;
    cost_tables_ = BuildCostTables(draft_curve_, verify_curve_, config_.max_num_seqs,
                                   config_.max_num_batched_tokens, cost_cudagraph_limit_);
    max_total_logits_ = MaxChunkLogits(config_.vocab_size);
  }
  running_.reserve(static_cast<size_t>(config_.max_num_seqs) + 1);
  decodes_.reserve(static_cast<size_t>(config_.max_num_seqs));
  prefills_.reserve(static_cast<size_t>(config_.max_num_seqs));
  outcomes_.reserve(static_cast<size_t>(config_.max_num_seqs));
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

bool Scheduler::GrowBlocks(int32_t req, int32_t tokens, double now_s) {
  Req& r = reqs_[req];
  while (!kv_.Grow(r.blocks, tokens)) {
    const int32_t victim = running_.back();
    Preempt(victim, now_s);
    if (victim == req) return false;
  }
  return true;
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
        r.latent_accept = acceptance_.DrawWithConfidences(r.p.data(), shapes_[e.req], drafts, accept_rng_,
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
  outcomes_.clear();
  for (const Entry& e : decodes_) {
    Req& r = reqs_[e.req];
    RequestOutcome& out = outcomes_.emplace_back();
    out.req = e.req;
    int32_t emitted = 1;
    if (!spec) {
      r.computed += 1;
      r.computed_host = r.computed;
    } else {
      const int32_t verified = e.kept;
      const int32_t accepted = std::min(r.latent_accept, verified);
      out.verification = true;
      out.proposed = r.num_drafts;
      out.verified = verified;
      out.accepted = accepted;
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
    out.tokens = emitted;
    if (r.generated >= r.output_len) {
      out.finished = true;
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
    RequestOutcome& out = outcomes_.emplace_back();
    out.req = e.req;
    out.tokens = 1;
    if (r.generated >= r.output_len) {
      out.finished = true;
      Release(e.req);
    } else {
      r.phase = spec ? Phase::kNeedDraft : Phase::kDecode;
    }
  }
  CompactRunning();
  if (events_ != nullptr && !outcomes_.empty()) events_->OnOutcomes(end_s, outcomes_.data(), outcomes_.size());
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

}  // namespace dspark::sim
