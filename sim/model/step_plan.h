// One simulated model step as the metadata builders see it (docs/design.md section 3).
//
// The summary fields are always filled. The per-request and per-token arrays (host view,
// device view, block table, slot mapping) are built only when an observer asks for them
// (StepPlan::Arrays), because a run with no such observer must not pay for them: `run` aims at
// more than 100k simulated steps per second with the metadata check off.
//
// Layout conventions (the simulator's choices where docs/design.md is silent):
//  - Rows [0, num_decodes) are decodes (verifications or drafts), the prefill chunks follow,
//    then CUDA-graph padding rows. Padding rows have query length 0 (qsl = M), seq_len 0, a
//    block-table row of 0 (the null page) and no tokens.
//  - Graph padding applies to decode-only steps whose real token count M fits the largest
//    capture size: N is the next capture size, R = max(R_real, N / q_uniform) with q_uniform
//    = 1 (plain decode), K (DSpark draft) or 1 + K (verification, adaptive draft), as vLLM
//    pads the request count of uniform decode graphs. In such steps num_decodes = R and
//    num_decode_tokens = N. In mixed steps num_decodes counts the real decodes and
//    num_decode_tokens = qsl[num_decodes].
//  - block_table is [R, bt_stride] with bt_width = ceil(max_model_len / block_size) used
//    columns; unused columns of a row inside the width are 0 (null page), columns
//    [bt_width, bt_stride) hold -1, which no block id equals, so a builder that reads past the
//    width shows up in the check.
//  - slot_mapping is int64 [N]: block * block_size + offset of each real token's device
//    position, -1 for padding tokens.
#pragma once

#include <cstdint>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/batch.h"

namespace dspark::sim {

// The seed's eight cases (seed 000, metadata table).
enum class StepCase : int8_t {
  kPrefill = 0,          // prefills only, each its whole (re)computed prompt from 0
  kChunkedPrefill,       // prefills only, at least one chunk partial
  kMixed,                // decodes (or verifications) and prefills together
  kDecode,               // plain decodes, 1 token each (no DSpark)
  kSpecVerify,           // DSpark verification: 1 + k_r tokens per request
  kAdaptiveVerify,       // DSpark adaptive verification: device split differs from host's
  kSpecDraft,            // DSpark draft: K parallel query tokens per request
  kAdaptiveDraft,        // DSpark adaptive draft: per-request counts from the device
};
inline constexpr int kNumStepCases = 8;
absl::string_view StepCaseName(StepCase c);

// The inputs of the device-side draft allocation of an adaptive verification step
// (kernels/topb_alloc.cuh), so that an executor can run the kernel itself on the device and
// rewrite the staged host boundaries into qsl_device. Empty (present == false) in other steps.
struct TopBInputs {
  bool present = false;
  std::vector<float> scores;          // [num_decodes, max_k] fresh (device) survival scores
  std::vector<int32_t> max_drafts;    // [num_decodes] eligible drafts per decode request
  std::vector<int32_t> tail_offsets;  // [num_reqs - num_decodes] cumulative query lengths after the decodes
  int32_t num_decodes = 0;            // [requests] real decode requests (plan.num_decodes may count padding)
  int32_t max_k = 0;                  // [slots] row length of `scores` (K)
  int32_t budget = 0;                 // B [tokens] drafts kept in total
  int32_t base_tokens = 1;            // [tokens] tokens per decode besides its kept drafts
};

struct StepArrays {
  std::vector<int32_t> qsl_device;       // [R + 1] truth
  std::vector<int32_t> qsl_host;         // [R + 1] right total, maybe stale split
  std::vector<int32_t> seq_lens_device;  // [R] truth
  std::vector<int32_t> seq_lens_host;    // [R] maybe an upper bound or a stale split
  std::vector<int32_t> block_table;      // [R, bt_stride]
  std::vector<int64_t> slot_mapping;     // [N]
  std::vector<int64_t> request_ids;      // [R_real] workload request id of each real row
  TopBInputs topb;                       // adaptive verification steps only
};

class StepPlan;

// Whoever planned the step builds its arrays on demand (the scheduler).
class StepMaterializer {
 public:
  virtual ~StepMaterializer() = default;
  virtual absl::Status Materialize(const StepPlan& plan, StepArrays* out) const = 0;
};

class StepPlan {
 public:
  int64_t index = 0;          // 0-based step number of the run
  double start_s = 0.0;       // [s] simulated time the step starts (set by the engine)
  double end_s = 0.0;         // [s] simulated time its outputs are available
  double gpu_us = 0.0;        // [us] modelled GPU time (forward + metadata)
  double host_us = 0.0;       // [us] modelled host time (scheduling + metadata preparation)

  StepCase step_case = StepCase::kPrefill;
  bool draft_step = false;       // drafter forward (draft cases) rather than target forward
  bool graph_padded = false;     // N was padded to a CUDA-graph capture size
  bool host_view_stale = false;  // host qsl or seq_lens differ from the device view somewhere

  int32_t num_reqs_real = 0;      // requests in the batch
  int32_t num_reqs = 0;           // R: after graph padding
  int32_t num_tokens_real = 0;    // M = qsl_device[R_real]
  int32_t num_tokens = 0;         // N: after graph padding
  int32_t num_decodes = 0;        // see the layout conventions above
  int32_t num_decode_tokens = 0;  // N_d
  int32_t num_prefills = 0;       // prefill chunks in the batch
  int32_t num_prefill_tokens = 0; // [tokens]
  int32_t capacity = 0;           // [tokens] persistent buffer length
  int32_t bt_width = 0;           // [blocks]
  int32_t bt_stride = 0;          // [int32]
  int32_t draft_budget = -1;      // B of adaptive steps ([tokens] kept drafts), -1 otherwise
  int32_t eligible_drafts = 0;    // [tokens] drafts the verifications could have kept
  int64_t sum_seq_lens = 0;       // [tokens] sum of device seq_lens (KV read by attention)
  double attn_pairs = 0.0;        // [query x key pairs] causal attention work of the step

  BatchSizes sizes() const;

  // Builds (once per step) and returns the arrays. An error here is a simulator bug, e.g. the
  // emulated top-B kernel disagreeing with the fast allocation the step was planned with.
  absl::StatusOr<const StepArrays*> Arrays() const;

  // Wiring used by the planner: the arrays are built into `storage` by `materializer`.
  void BindMaterializer(const StepMaterializer* materializer, StepArrays* storage) {
    materializer_ = materializer;
    storage_ = storage;
    materialized_ = false;
  }

 private:
  const StepMaterializer* materializer_ = nullptr;
  StepArrays* storage_ = nullptr;
  mutable bool materialized_ = false;
  mutable absl::Status status_;
};

// The kernels' view of a materialised step: pointers into `arrays` (which must outlive the
// result).
BatchInputs ToBatchInputs(const StepPlan& plan, const StepArrays& arrays);
// Materialises the plan's arrays, then wires them.
absl::StatusOr<BatchInputs> ToBatchInputs(const StepPlan& plan);

}  // namespace dspark::sim
