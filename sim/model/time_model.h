// Step time model: forward-pass cost + metadata cost of one implementation + host overhead,
// placed on the engine's host and GPU clocks by sim/model/engine_clock.h:
//
//   host_pre_us = sched_us + sched_us_per_req * R_real (once per engine step: a DSpark draft
//                 step is inside its target's) + spec_host_us (DSpark modes)
//                 + metadata_host_us(impl) + metadata_host_us_per_req(impl) * R_real
//                 + adaptive_host_us (adaptive verification: the budget)
//   builders    = launches(impl, case) eager launches of metadata_gpu_us(impl, case, N) in all,
//                 host_syncs(impl) syncs
//   forward     = forward_us + adaptive_gpu_us (adaptive steps)
//
// The target model's forward (prefill, decode, verification) is a roofline over the model's
// structure (time_model_forward.h); a calibration file's `forward.target` replaces it with the
// linear form fixed + per_token * N + per_ctx_token * sum(seq_lens) + per_attn_pair * pairs,
// which the DSpark drafter (draft steps) always uses. Under async scheduling the host prepares engine step k + 1
// while step k runs, so the builders' eager dispatch costs time only where an engine step's
// host work outlasts its GPU work, or behind a sync.
//
// Metadata costs come from a calibration JSON (schema in docs/models.md) when given,
// otherwise from each implementation's registration (ImplInfo::default_cost): the seed's GB200
// batch-16 table on (a) and (d), labelled estimates derived from them for the others. The
// shipped calibration (workloads/calibration_h200.json) carries the H200 measurements of
// vLLM's states and the host terms fitted on batch-1 512/128 and SPEED-Bench concurrency 1
// (tests/model/test_sim_time_model.cc checks the fit).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/suite/suite.h"
#include "sim/model/adaptive.h"
#include "sim/model/engine_clock.h"
#include "sim/model/step_plan.h"
#include "sim/model/time_model_forward.h"

namespace dspark::sim {

// Names of the impl axis as the CLI spells them (kernels/suite/impl_registry.h).
absl::string_view ImplKey(Impl impl);
absl::StatusOr<Impl> ParseImplKey(absl::string_view name);
// Comma-separated list; "all" means every implementation. Keeps the given order, no repeats.
absl::StatusOr<std::vector<Impl>> ParseImplKeyList(absl::string_view list);

struct ForwardCoeffs {
  double fixed_us = 0;          // [us] per step
  double per_token_us = 0;      // [us per token] of N (padded tokens are computed too)
  double per_ctx_token_us = 0;  // [us per token] of sum(seq_lens): KV read
  double per_attn_pair_us = 0;  // [us per query x key pair]: causal attention compute
};

struct ImplCost {
  std::array<double, kNumStepCases> gpu_us{};  // [us] per builder suite, by StepCase
  double gpu_us_per_token = 0;                 // [us per token] above the seed's batch 16
  double host_us = 0;                          // [us] host metadata preparation per step
  double host_us_per_req = 0;                  // [us per request]
  bool serializes_host = false;                // reads host boundaries (reported, not timed)
  bool estimated = false;                      // no measurement behind the default
  std::array<int32_t, kNumStepCases> launches{};  // eager launches + copies per suite, by case
  int32_t host_syncs = 0;                      // host syncs per suite
};

struct TimeModelParams {
  ForwardCoeffs target;         // the linear target forward, used when target_roofline_on is false
  bool target_roofline_on = true;  // the target's forward is the roofline (time_model_forward.h)
  RooflineForward target_roofline;
  ForwardCoeffs drafter;
  double sched_us = 0;          // [us] host scheduling + input preparation per step
  double sched_us_per_req = 0;  // [us per request]
  double spec_host_us = 0;      // [us] extra host work per step in DSpark modes
  double adaptive_host_us = 0;  // [us] extra host work per adaptive step (budget, bookkeeping)
  double adaptive_gpu_us = 0;   // [us] extra GPU work per adaptive step (scores, allocation)
  int32_t reference_tokens = 96;  // [tokens] N at which gpu_us was measured (batch 16 x 6)
  std::vector<ImplCost> impls = std::vector<ImplCost>(NumImpls());  // by Impl::index(), every registered impl
  EngineCostParams engine;                // the engine's host costs (engine_clock.h)
  CostCurve draft_curve_ms;               // adaptive budget's draft curve; empty: derived
  CostCurve verify_curve_ms;              // ... verify curve; empty: derived (scheduler.cc)
  std::string source = "default";         // "default" or the calibration file
  std::string source_device;              // calibration file's meta.gpu / driver / date
};

TimeModelParams DefaultTimeModelParams();
// `impl`'s metadata costs before any calibration, from its registration
// (ImplInfo::default_cost, kernels/suite/impl_registry.h).
ImplCost DefaultImplCost(Impl impl);
// Reads a calibration JSON over the defaults: every key is optional, unknown keys are errors.
absl::StatusOr<TimeModelParams> LoadCalibration(const std::string& path);

struct StepCost {
  double gpu_us = 0;
  double host_us = 0;
  double wall_us = 0;
};

class TimeModel {
 public:
  explicit TimeModel(TimeModelParams params) : p_(std::move(params)) {}
  const TimeModelParams& params() const { return p_; }

  // One step alone (a fresh engine clock): wall_us is its start-to-output time.
  StepCost Cost(const StepPlan& plan, Impl impl, bool spec_mode) const;
  // The step's work on the engine clocks.
  StepWork Work(const StepPlan& plan, Impl impl, bool spec_mode) const;

  // The forward part alone.
  // `routed_tokens`: RooflineTerms' (< 0: every token is routed on its own).
  double ForwardUs(bool draft_step, int32_t num_tokens, int64_t sum_seq_lens,
                   double attn_pairs, int32_t routed_tokens = -1) const {
    if (!draft_step && p_.target_roofline_on)
      return RooflineTerms(p_.target_roofline, num_tokens, sum_seq_lens, attn_pairs, routed_tokens).total_us();
    const ForwardCoeffs& c = draft_step ? p_.drafter : p_.target;
    return c.fixed_us + c.per_token_us * num_tokens + c.per_ctx_token_us * sum_seq_lens +
           c.per_attn_pair_us * attn_pairs;
  }
  double MetadataGpuUs(Impl impl, StepCase c, int32_t num_tokens) const {
    const ImplCost& cost = p_.impls[impl.index()];
    const int32_t above = num_tokens > p_.reference_tokens ? num_tokens - p_.reference_tokens : 0;
    return cost.gpu_us[static_cast<int>(c)] + cost.gpu_us_per_token * above;
  }

 private:
  TimeModelParams p_;
};

}  // namespace dspark::sim
