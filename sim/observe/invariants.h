// An invariant check of the scheduler, the engine and the KV pool, written from docs/design.md and
// the layout conventions of sim/model/step_plan.h rather than from the scheduler: it recomputes the
// CUDA-graph capture sizes itself and calls no scheduler helper. It is a StepObserver: it reads
// each plan, the request events and (through OnStart) the KV state, and never steers.
//
// Every step (summary fields of the plan):
//  - budgets: 1 <= R_real <= max_num_seqs, R_real <= M <= max_num_batched_tokens (every
//    scheduled request carries a token), running requests <= max_num_seqs, N <= capacity;
//  - per-case token bounds: plain decode 1 token, verification 1 + k_r <= 1 + K, DSpark draft
//    <= K, adaptive draft <= 1 + K per request; adaptive verification carries exactly R_d + B
//    tokens with 0 <= B <= eligible drafts; the case matches the mode; draft steps have no
//    prefills;
//  - CUDA-graph padding: padded iff graphs are on, the step is decode-only and M fits the
//    largest capture size; then N is the smallest capture size >= M, R = max(R_real, N / q)
//    (q = 1, K or 1 + K by case), num_decodes = R, num_decode_tokens = N; else N = M, R = R_real;
//  - steps are numbered consecutively and simulated time never runs backwards;
//  - no request is preempted while an adaptive draft step is planned: the dropped request's
//    kept-draft count is known only to the device, so the host could not know the step's
//    token total (which must equal the device's, checked per row below).
// Every `kv_every`-th step: the free list and the blocks of the running requests partition the
// usable blocks 1..num_blocks-1 exactly: no id out of range (block 0, the null page, is never
// handed out), none twice (two owners, or owned and free), none missing (a leak).
// Every `rows_every`-th step (0: never; it materialises the step's arrays): per row, query
// length within its case bound, host and device token totals equal, seq_len <=
// max_model_len, no request twice in a step, the
// request running and holding blocks for its whole context, each token's slot at its position
// in its own blocks, padding rows and tokens empty.
// Request events: submitted once; tokens only between submission and finish; finished exactly
// once, with exactly output_len tokens; never preempted after finishing.
// At Finish (end of the run): every request of the workload finished exactly once, and every
// block except the null block is back on the free list.
//
// The first violation is kept as an absl::Status naming the step, the field and the values.
// OnStep returns it so that the run stops there, unless `stop_on_violation` is false.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "sim/model/scheduler.h"
#include "sim/engine/step_observer.h"
#include "sim/model/step_plan.h"
#include "sim/workload/trace.h"

namespace dspark::sim {

struct InvariantOptions {
  int64_t kv_every = 1;    // [steps] period of the KV partition check, >= 1
  int64_t rows_every = 0;  // [steps] period of the per-row check, 0 = never
  bool stop_on_violation = true;
};

// The KV state as the checker sees it: the pool's free list and the block list of every
// running request.
struct KvView {
  struct Holder {
    int64_t request_id = 0;                      // workload id
    const std::vector<int32_t>* blocks = nullptr;  // [blocks] in position order
  };
  int32_t num_blocks = 0;                             // [blocks] pool size incl. the null block 0
  const std::vector<int32_t>* free_blocks = nullptr;  // the pool's free list
  std::vector<Holder> holders;                        // one per running request
};

// CUDA-graph capture sizes [tokens] as docs/design.md s.3 states them: [1, 2, 4] + range(8, 256, 8)
// + range(256, max + 1, 16), max = min(max_num_seqs * (1 + K) * 2, 512); with speculation
// (spec_k > 0) rounded up to multiples of 1 + K; sizes above max_num_batched_tokens dropped.
std::vector<int32_t> DesignCaptureSizes(int32_t max_num_seqs, int32_t max_num_batched_tokens,
                                        int32_t spec_k);

class InvariantChecker final : public StepObserver {
 public:
  explicit InvariantChecker(const SchedulerConfig& config, InvariantOptions options = {});

  absl::string_view name() const override { return "invariants"; }
  // Reads the engine's workload and, from then on, its scheduler's KV state.
  void OnStart(const Engine& engine) override;
  absl::Status OnStep(const StepPlan& plan) override;
  void OnArrival(int32_t req, double time_s) override;
  void OnTokens(int32_t req, double time_s, int32_t tokens) override;
  void OnFinished(int32_t req, double time_s) override;
  void OnPreempted(int32_t req, double time_s) override;
  // End-of-run checks, then the section: counts and the first violation (or null).
  absl::Status Finish(nlohmann::json* section) override;

  // Without an engine (tests): the workload the request events refer to. Clears the per-run
  // state (request states, step numbering), not the violations recorded so far.
  void Reset(const std::vector<RequestSpec>& workload);

  // The checks, each returning the violation it finds (or OK) without recording it.
  absl::Status CheckPlan(const StepPlan& plan) const;
  absl::Status CheckKv(int64_t step, const KvView& view);
  absl::Status CheckRows(const StepPlan& plan, const StepArrays& arrays, const KvView& view) const;
  // Every request of the workload finished exactly once.
  absl::Status CheckAllFinished() const;
  // CheckAllFinished, no request running or holding a block, every usable block free.
  absl::Status CheckEndOfRun(const KvView& view);

  bool ok() const { return violations_ == 0; }
  const absl::Status& first_violation() const { return first_; }
  int64_t violations() const { return violations_; }
  int64_t steps_checked() const { return steps_checked_; }
  int64_t kv_checks() const { return kv_checks_; }
  int64_t row_checks() const { return row_checks_; }
  int64_t requests_finished() const { return finished_count_; }
  const std::vector<int32_t>& capture_sizes() const { return capture_sizes_; }

 private:
  enum class ReqState : uint8_t { kPending, kSubmitted, kFinished };

  // Counts a violation and keeps the first one.
  void Keep(absl::Status violation);
  // Keep, then returns the violation when the run should stop on it.
  absl::Status Record(absl::Status violation);
  void FillKvView();

  SchedulerConfig config_;
  InvariantOptions options_;
  int32_t k_;  // [tokens] speculative length, 0 without speculation
  std::vector<int32_t> capture_sizes_;

  const Scheduler* scheduler_ = nullptr;  // KV state source (OnStart), null in unit tests
  KvView view_;
  const std::vector<RequestSpec>* workload_ = nullptr;
  std::vector<ReqState> state_;          // [requests]
  std::vector<int32_t> emitted_;         // [requests] output tokens so far
  std::vector<int64_t> finished_step_;   // [requests] step whose commit finished it
  int64_t finished_count_ = 0;
  int64_t preempted_while_planning_ = -1;  // first request id preempted since the last plan
  int64_t last_index_ = -1;              // index of the last plan seen
  double last_end_s_ = 0.0;              // [s]
  double last_start_s_ = 0.0;            // [s]

  // Ownership scratch of CheckKv: owner_[b] is valid when stamp_[b] == stamp.
  std::vector<int64_t> stamp_;           // [num_blocks]
  std::vector<int64_t> owner_;           // [num_blocks] request id, -1 = free list
  int64_t stamp_counter_ = 0;

  int64_t steps_checked_ = 0, kv_checks_ = 0, row_checks_ = 0;
  int64_t violations_ = 0;
  absl::Status first_;
};

}  // namespace dspark::sim
