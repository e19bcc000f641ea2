// vLLM-v1-like scheduler with DSpark speculative decoding and adaptive verification.
//
// Each call of Plan() decides one model step; Commit() applies its outcome. In DSpark modes
// steps alternate: a target step (verifications of the decoding requests, plus prefill chunks)
// and a draft step (one parallel drafter pass for every request that got a token from the
// target step). Semantics, with the choices docs/design.md leaves open:
//
// Target step. Running requests are visited in admission order (vLLM's running list): a
// decoding request takes 1 + k_r tokens, a partially prefilled one its next chunk from the
// remaining budget; then waiting requests are admitted FCFS while the token budget, the
// max_num_seqs limit and free KV blocks allow (chunked prefill). The batch is laid out
// decodes first, then prefills. k_r <= K, <= remaining_output - 1 (no verification past the
// output length), and small enough that every speculative position of this verification and
// of the draft after it stays below max_model_len.
//
// Verification outcome. The request's last draft step drew the latent accepted prefix L_r;
// verifying k_r drafts accepts a_r = min(L_r, k_r) and emits a_r + 1 tokens (the accepted
// drafts and the bonus token).
//
// Adaptive verification, as vLLM's adaptive_verification.py computes it (releases 0.28.0-
// 0.34.0, SchedulerConfig::av_release; they differ only in the allocation's tie order):
//  - Confidences. A request enters (and re-enters after a preemption) at confidence 1.0
//    everywhere (add_request). Each draft step draws fresh float32 confidences (the device's
//    _confidence_probs); the host holds those of the draft round before (record_confidences'
//    two staged copies, one round behind).
//  - Batch order. The verification rows lead the batch as vLLM's sort_batch_req_ids orders
//    them: rows with drafts first, those with K drafts (1 + K tokens) before the others, then
//    by ascending token count, ties in running order; rows without drafts after them.
//  - Host budget (get_num_tokens, ComputeDraftBudget) once the whole step is scheduled,
//    prefill chunks included: B = argmax over b of (sampling requests + best b stale survival
//    scores) / (draft_ms[requests] + verify_ms[non-draft tokens + b]), b up to the drafts and
//    the rejection sampler's logits chunk (MaxChunkLogits(vocab_size) - requests), with the
//    tables of BuildCostTables (step function up to the largest capture size). The
//    scheduler's token budget counted every eligible draft, as vLLM's does; pruning does not
//    give tokens back to admissions. The step runs Σ non-draft + B tokens: graph padding
//    stays padding.
//  - Device allocation (reallocate_drafts): none when B is 0, every scheduled draft when B
//    covers them, otherwise the top-B slots of the fresh float32 survival scores
//    (TopBAllocator == kernels/topb_alloc.cuh; ties to the lower (request, step)); the device
//    qsl is rewritten to 1 + kept per decode, prefill chunks after, the padding rows at the
//    real total.
//  - Host split (compact_batch, HostDraftSplit): the drafts as scheduled when B covers them,
//    otherwise B / nv per verification row and one more for the first B % nv, with no cap;
//    the host's seq_lens stay the pre-compaction upper bound (num_computed + 1 + drafts).
//  - Masked (a what-if, no release has it): the layout and host metadata stay as scheduled
//    (1 + eligible tokens per decode); the pruned drafts are padding inside it and cannot be
//    accepted.
//
// Draft step. After a verification only the device knows a_r, so the host's context length
// is an upper bound (vLLM's seq_lens_cpu_upper_bound): as if every verifiable draft had been
// accepted. DSpark draft: K query tokens per request (fewer only near max_model_len), device
// seq_len = true context + K, host seq_len = upper bound + K. Adaptive draft: the drafter
// re-encodes what the device verification kept, 1 + kept_r query tokens per request (device
// counts; the host knows the total R + B but holds its stale split); requests fresh from
// prefill take K. After a masked verification the layout was not compacted, so the draft
// re-encodes 1 + eligible tokens per request, known to the host. Either way the drafter proposes K drafts per request.
//
// Completion. A request that completes during a verification has its finish time at that
// step's end, but stays in the following draft step (the host learns acceptance counts only
// after it) and releases its KV blocks after that step. One that completes at prefill (the
// host knows a prefill emits exactly one token) leaves at once.
//
// KV cache. The host allocates blocks for its upper bound of every position a step may write
// (all eligible drafts). When a running request cannot grow, the newest running request is
// preempted (recompute: its KV is freed, it returns to the front of the waiting queue and
// later re-prefills prompt + generated tokens). Admission never preempts. In adaptive mode a
// target step also reserves what the draft step after it writes (vLLM's lookahead slots): up
// to 1 + k_r positions past a verification's bound, K after a completed prefill. So an
// adaptive draft step never grows a block list and never preempts: dropping a request whose
// kept-draft count only the device knows would leave the host unable to know the step's token
// total (the host total must equal the device's, R + B).

//
// CUDA graphs. Decode-only steps whose real token count fits the largest capture size are
// padded to the next capture size (see step_plan.h for the padded request count).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/model/acceptance.h"
#include "sim/model/adaptive.h"
#include "sim/model/kv_cache.h"
#include "sim/model/request_outcome.h"
#include "sim/model/spec_mode.h"
#include "sim/workload/rng.h"
#include "sim/model/step_plan.h"
#include "sim/model/time_model.h"
#include "sim/workload/trace.h"

namespace dspark::sim {

struct SchedulerConfig {
  SpecMode mode = SpecMode::kAdaptive;
  int32_t spec_k = 5;                    // K [draft tokens]
  int32_t max_num_seqs = 256;            // [requests] running at once
  int32_t max_num_batched_tokens = 16384;  // [tokens] per step
  int32_t max_model_len = 16384;         // [tokens] prompt + output
  int32_t block_size = 64;               // [tokens per KV block]
  int32_t num_kv_blocks = 0;             // [blocks] incl. the null block 0; 0 = auto
  bool cuda_graphs = true;               // pad decode-only steps to capture sizes
  int32_t bt_stride_pad = 0;             // [int32] block-table row stride - width
  AdaptiveMode adaptive_mode = AdaptiveMode::kVarlen;
  int32_t av_release = kDefaultAvRelease;  // vLLM 0.<av_release>.0's adaptive verification
  int32_t vocab_size = 129280;             // [tokens] sizes the rejection sampler's logits chunk
};

// One adaptive verification step (a target step with drafts scheduled) as the scheduler
// decided it: vLLM's inputs and the simulator's outputs, rows in batch order, so that vLLM's
// own functions can be run on the inputs and compared (scripts/oracle/check_av.py).
struct AvStepRecord {
  int32_t num_reqs = 0;                   // scheduled requests (rows), decodes first
  int32_t num_reqs_padded = 0;            // rows after graph padding
  std::vector<int32_t> scheduled_tokens;  // [num_reqs] as scheduled (1 + drafts, or the chunk)
  std::vector<int32_t> drafts;            // [num_reqs] scheduled drafts (0 for a prefill)
  std::vector<int32_t> num_computed;      // [num_reqs] tokens computed before the step
  std::vector<int32_t> prefill_len;       // [num_reqs]
  std::vector<float> stale_conf;          // [num_reqs, K] the host's (budget input)
  std::vector<float> fresh_conf;          // [num_reqs, K] the device's (allocation input)
  int32_t budget = 0;                     // B
  std::vector<int32_t> host_tokens;       // [num_reqs] the host's per-request token counts
  std::vector<int32_t> device_drafts;     // [num_reqs] drafts the device verifies
  std::vector<int32_t> qsl_device;        // [num_reqs_padded + 1]
  std::vector<int32_t> cu_num_logits;     // [num_reqs + 1] kept drafts + 1 per request
};

// Auto KV pool: room for max_num_seqs requests of max_model_len tokens, plus the null block.
int32_t AutoKvBlocks(const SchedulerConfig& config);

// Notifications from Commit (and Plan, for preemptions); the engine forwards them to
// observers. Request indices are positions in the workload vector.
class SchedulerEvents {
 public:
  virtual ~SchedulerEvents() = default;
  virtual void OnTokens(int32_t req, double time_s, int32_t tokens) = 0;
  // One verification of a request: drafts proposed, drafts verified (k_r), drafts accepted.
  virtual void OnVerification(int32_t req, int32_t proposed, int32_t verified,
                              int32_t accepted) = 0;
  virtual void OnFinished(int32_t req, double time_s) = 0;
  virtual void OnPreempted(int32_t req, double time_s) = 0;
  // A committed step's token, verification and finish events at `time_s`, in order, once per
  // Commit; by default as the single events above.
  virtual void OnOutcomes(double time_s, const RequestOutcome* outcomes, size_t n) {
    DeliverOutcomes(*this, time_s, outcomes, n);
  }
};

struct SchedulerCounters {
  int64_t preemptions = 0;
  int64_t steps = 0;
  int32_t peak_running = 0;
  int32_t peak_kv_blocks = 0;
};

class Scheduler final : public StepMaterializer {
 public:
  Scheduler(const SchedulerConfig& config, const std::vector<RequestSpec>& workload,
            const AcceptanceModel& acceptance, const TimeModel& time_model, uint64_t seed);

  void set_events(SchedulerEvents* events) { events_ = events; }
  const SchedulerConfig& config() const { return config_; }
  const std::vector<int32_t>& capture_sizes() const { return capture_sizes_; }
  const SchedulerCounters& counters() const { return counters_; }
  const KvCache& kv() const { return kv_; }
  // Read-only views for independent checkers (sim/observe/invariants.h): the running requests in
  // admission order, and the KV blocks and workload id of request `req`.
  const std::vector<int32_t>& running() const { return running_; }
  const std::vector<int32_t>& blocks_of(int32_t req) const { return reqs_[req].blocks; }
  int64_t request_id(int32_t req) const { return reqs_[req].id; }

  // The request enters the waiting queue (the engine calls this at its submission time).
  void Submit(int32_t req);
  bool HasWork() const { return !running_.empty() || !waiting_.empty(); }

  // Plans the next step at simulated time `now_s` into `plan` (summary fields; arrays on
  // demand). Returns FailedPrecondition when work is pending but nothing can be scheduled
  // (a request that can never fit the KV pool).
  absl::Status Plan(double now_s, StepPlan* plan);
  // Applies the planned step's outcome at its end time.
  void Commit(double end_s);

  // KV blocks partition exactly into free and held (by running requests); nothing leaks.
  absl::Status CheckKvConsistency() const;

  absl::Status Materialize(const StepPlan& plan, StepArrays* out) const override;

  // The planned step's adaptive verification (false when it is none: a draft step, a step
  // without drafts, or not adaptive mode). The device qsl comes from plan.Arrays().
  absl::StatusOr<bool> RecordAdaptiveStep(const StepPlan& plan, AvStepRecord* out) const;
  // The step-cost curves and tables the host budget uses (adaptive mode), and the limit.
  const CostCurve& draft_cost_curve() const { return draft_curve_; }
  const CostCurve& verify_cost_curve() const { return verify_curve_; }
  const DraftCostTables& cost_tables() const { return cost_tables_; }
  int32_t cost_cudagraph_limit() const { return cost_cudagraph_limit_; }

 private:
  enum class Phase : uint8_t {
    kPending,      // not yet submitted
    kWaiting,      // in the waiting queue (fresh or preempted)
    kPrefill,      // running, prefill (or recompute) in progress
    kDecode,       // running, no speculation: next step decodes one token
    kNeedDraft,    // running, DSpark: the next draft step drafts for it
    kNeedVerify,   // running, DSpark: holds drafts to verify
    kZombie,       // finished at a verification; rides the next draft step, then leaves
    kDone,
  };
  struct Req {
    int64_t id = 0;
    int32_t prompt_len = 0;
    int32_t output_len = 0;
    int32_t prefill_len = 0;     // [tokens] to (re)compute before decoding
    int32_t computed = 0;        // [tokens] with valid KV: device truth
    int32_t computed_host = 0;   // [tokens] host view, >= computed (upper bound)
    int32_t generated = 0;       // [tokens] output emitted
    int32_t num_drafts = 0;      // drafts proposed by the last draft step
    int32_t latent_accept = 0;   // accepted prefix among them (drawn at the draft step)
    int32_t last_maxd = 0;       // eligible drafts of the last verification
    int32_t last_kept_dev = 0;   // drafts the last verification kept (device)
    int32_t last_kept_host = 0;  // ... as the host believes
    bool verified_last = false;  // the last target step verified it (vs completed a prefill)
    Phase phase = Phase::kPending;
    std::array<float, kMaxSpecK> p{};          // conditional acceptance per position
    std::array<float, kMaxSpecK> conf{};       // confidences of the last draft (device, fresh)
    std::array<float, kMaxSpecK> conf_host{};  // staged confidences the host holds (one round older)
    std::vector<int32_t> blocks;               // KV block ids
  };
  struct Entry {
    int32_t req = 0;
    int32_t q_dev = 0, q_host = 0;      // [tokens] query length, device / host view
    int32_t seq_dev = 0, seq_host = 0;  // [tokens] context incl. query
    int32_t max_drafts = 0;             // verification: eligible drafts
    int32_t kept = 0;                   // verification: drafts the device verifies (<= max_drafts)
  };

  static void AddEntry(std::vector<Entry>* entries, int32_t req, int32_t q_dev, int32_t q_host,
                       int32_t seq_dev, int32_t seq_host, int32_t max_drafts, int32_t kept = 0);
  int32_t VerifyCap(const Req& r) const {
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
  // [tokens] KV to hold for a prefill chunk ending at `seq`: in adaptive mode a chunk that
  // completes the prefill (of a request that will draft) also reserves the K positions of the
  // draft step after it.
  int32_t PrefillDraftReserve(const Req& r, int32_t seq) const;
  // Grows req's blocks to `tokens`, preempting the newest running requests as needed; false
  // when `req` itself was preempted.
  bool EnsureBlocks(int32_t req, int32_t tokens, double now_s) {
    return kv_.Covers(reqs_[req].blocks, tokens) || GrowBlocks(req, tokens, now_s);
  }
  bool GrowBlocks(int32_t req, int32_t tokens, double now_s);  // EnsureBlocks past its fast path
  void Preempt(int32_t victim, double now_s);
  void PlanTarget(double now_s);
  // FCFS admission of waiting requests (chunked prefill) into the `budget` tokens left.
  void AdmitWaiting(int32_t budget);
  void PlanDraft(double now_s);
  void AllocateAdaptive();
  // Confidence 1.0 at every position, fresh and staged (vLLM's add_request).
  void ResetConfidences(Req& r) const;
  void FinishPlan(StepPlan* plan);
  void Release(int32_t req);
  void CompactRunning();

  SchedulerConfig config_;
  int32_t k_;
  const AcceptanceModel& acceptance_;
  const TimeModel& time_model_;
  Rng accept_rng_;
  std::vector<Req> reqs_;
  // Adaptive: per request, the confidence draws' constants of its p (kept out of Req, which the
  // scheduler's passes walk, since they are ~10x its size and read only by the draft commit).
  std::vector<AcceptanceModel::ConfidenceShapes> shapes_;
  std::vector<int32_t> running_;  // admission order
  std::deque<int32_t> waiting_;
  KvCache kv_;
  std::vector<int32_t> capture_sizes_;
  int32_t max_capture_ = 0;
  int32_t bt_width_ = 0;
  SchedulerEvents* events_ = nullptr;
  SchedulerCounters counters_;

  // The planned step.
  bool draft_step_ = false;
  StepCase case_ = StepCase::kPrefill;
  int32_t num_reqs_padded_ = 0;
  int32_t num_tokens_padded_ = 0;
  int32_t draft_budget_ = -1;
  bool preempted_this_step_ = false;
  std::vector<Entry> decodes_, prefills_;
  std::vector<RequestOutcome> outcomes_;  // the committed step's request events
  // Adaptive scratch: [num_decodes, K] device and host survival scores, per-request counts.
  std::vector<float> scores_dev_, scores_host_;
  std::vector<int32_t> max_drafts_, kept_dev_, kept_host_;
  DraftBudgetScratch budget_scratch_;
  TopBAllocator allocator_;
  DraftCostTables cost_tables_;  // adaptive mode: the host budget's step costs
  CostCurve draft_curve_, verify_curve_;  // ... and the curves they were built from
  int32_t cost_cudagraph_limit_ = 0;
  int32_t max_total_logits_ = 0;  // MaxChunkLogits(vocab_size)
  StepArrays arrays_;  // built on demand by Materialize
};

}  // namespace dspark::sim
