// Adaptive verification inside the scheduler, as vLLM's adaptive_verification.py runs it: new
// requests at confidence 1.0, the token cap of a graph-padded step, varlen's placeholder host
// split and pre-compaction seq_lens bound, and masked mode's unchanged layout.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/model/acceptance.h"
#include "sim/model/adaptive.h"
#include "sim/model/scheduler.h"
#include "sim/model/time_model.h"

namespace dspark::sim {
namespace {

struct VerifyStep {
  StepPlan plan;
  StepArrays arrays;
};

// Runs the workload and keeps every adaptive verification step with its arrays.
std::vector<VerifyStep> RunAdaptive(const SchedulerConfig& c, const TimeModelParams& tp, int32_t requests,
                                    int32_t concurrency) {
  std::vector<RequestSpec> reqs(static_cast<size_t>(requests));
  for (int32_t i = 0; i < requests; ++i) reqs[static_cast<size_t>(i)] = {i, 0.0, 40 + 7 * i, 60, {}};
  const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
  const TimeModel time_model(tp);
  EngineOptions options;
  options.concurrency = concurrency;
  Engine engine(c, reqs, acceptance, time_model, options, 11);
  struct Keep final : StepObserver {
    absl::string_view name() const override { return "keep"; }
    absl::Status OnStep(const StepPlan& p) override {
      if (p.step_case != StepCase::kAdaptiveVerify && p.step_case != StepCase::kMixed) return absl::OkStatus();
      if (p.draft_budget < 0) return absl::OkStatus();
      auto a = p.Arrays();
      if (!a.ok()) return a.status();
      steps.push_back({p, **a});
      return absl::OkStatus();
    }
    std::vector<VerifyStep> steps;
  } keep;
  engine.AddObserver(&keep);
  EXPECT_TRUE(engine.Run().ok());
  return keep.steps;
}

// Step costs steep enough that a draft is worth verifying only at a survival score above 0.9:
// verify_ms(n) = 0.1 + 0.9 n, drafts free; one request samples one token per step.
TimeModelParams SteepCosts() {
  TimeModelParams tp = DefaultTimeModelParams();
  tp.verify_curve_ms = {{0, 0.1}, {1000, 900.1}};
  tp.draft_curve_ms = {{0, 0.0}, {100, 0.0}};
  return tp;
}

// add_request sets a new request's staged confidences to 1.0: its first verification keeps
// every draft (each adds one expected token for less than one token's cost); later ones see
// the drafter's real (stale) confidences and keep far fewer.
TEST(AdaptiveScheduler, NewRequestsStartAtConfidenceOne) {
  SchedulerConfig c;
  c.mode = SpecMode::kAdaptive;
  c.cuda_graphs = false;  // no padding, so no token cap
  c.max_num_seqs = 4;
  const std::vector<VerifyStep> steps = RunAdaptive(c, SteepCosts(), 6, 1);
  ASSERT_GT(steps.size(), 20u);
  std::map<int64_t, int> seen;
  int64_t later_kept = 0, later_eligible = 0;
  for (const VerifyStep& s : steps) {
    ASSERT_EQ(s.plan.num_decodes, 1);
    const int64_t id = s.arrays.request_ids[0];
    if (seen[id]++ == 0) {
      EXPECT_EQ(s.plan.draft_budget, s.plan.eligible_drafts) << "first verification of request " << id;
    } else {
      later_kept += s.plan.draft_budget;
      later_eligible += s.plan.eligible_drafts;
    }
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_LT(later_kept, later_eligible / 2);
}

// compact_batch's token cap: a graph-padded step is given its padded token count, so its
// padding slots are filled with drafts: B = min(eligible, N - non-draft tokens).
TEST(AdaptiveScheduler, PaddedStepsFillTheirPaddingWithDrafts) {
  SchedulerConfig c;
  c.mode = SpecMode::kAdaptive;
  c.max_num_seqs = 8;
  const std::vector<VerifyStep> steps = RunAdaptive(c, SteepCosts(), 16, 5);
  int padded = 0;
  for (const VerifyStep& s : steps) {
    if (!s.plan.graph_padded) continue;
    ++padded;
    const int32_t nd = static_cast<int32_t>(s.arrays.request_ids.size());
    EXPECT_EQ(s.plan.draft_budget, std::min(s.plan.eligible_drafts, s.plan.num_tokens - nd)) << "step " << s.plan.index;
  }
  EXPECT_GT(padded, 10);
}

// Varlen: the host knows the total and B; its split is vLLM's placeholder (EvenDraftSplit), and
// its seq_lens bound is the pre-compaction num_computed + 1 + eligible, never below the device's.
TEST(AdaptiveScheduler, VarlenHostHoldsThePlaceholderSplitAndTheUpperBound) {
  SchedulerConfig c;
  c.mode = SpecMode::kAdaptive;
  c.cuda_graphs = false;
  c.max_num_seqs = 8;
  const std::vector<VerifyStep> steps = RunAdaptive(c, SteepCosts(), 16, 8);
  int stale = 0;
  for (const VerifyStep& s : steps) {
    const StepArrays& a = s.arrays;
    const int32_t nd = s.plan.step_case == StepCase::kMixed ? s.plan.num_decodes : s.plan.num_reqs_real;
    EXPECT_EQ(a.qsl_host.back(), a.qsl_device.back());
    std::vector<int32_t> caps(static_cast<size_t>(nd)), host(static_cast<size_t>(nd)), want(static_cast<size_t>(nd));
    for (int32_t r = 0; r < nd; ++r) {
      const int32_t dev_kept = a.qsl_device[r + 1] - a.qsl_device[r] - 1;
      // seq_host - seq_dev = eligible - kept on the device
      caps[r] = dev_kept + a.seq_lens_host[r] - a.seq_lens_device[r];
      host[r] = a.qsl_host[r + 1] - a.qsl_host[r] - 1;
      EXPECT_GE(a.seq_lens_host[r], a.seq_lens_device[r]);
    }
    EvenDraftSplit(caps.data(), nd, s.plan.draft_budget, want.data());
    EXPECT_EQ(host, want) << "step " << s.plan.index;
    stale += a.qsl_host != a.qsl_device;
  }
  EXPECT_GT(stale, 0);
}

// Masked: the layout is the scheduled one (1 + eligible per decode) on host and device alike,
// so no adaptive step is stale, no allocation kernel rewrites the boundaries, and drafts are
// still pruned (they become padding and cannot be accepted).
TEST(AdaptiveScheduler, MaskedKeepsTheLayoutAndPrunesInsideIt) {
  SchedulerConfig c;
  c.mode = SpecMode::kAdaptive;
  c.adaptive_mode = AdaptiveMode::kMasked;
  c.max_num_seqs = 8;
  const std::vector<VerifyStep> steps = RunAdaptive(c, SteepCosts(), 16, 8);
  int64_t kept = 0, eligible = 0;
  for (const VerifyStep& s : steps) {
    EXPECT_EQ(s.arrays.qsl_host, s.arrays.qsl_device) << "step " << s.plan.index;
    EXPECT_EQ(s.arrays.seq_lens_host, s.arrays.seq_lens_device);
    EXPECT_FALSE(s.arrays.topb.present);
    EXPECT_FALSE(s.plan.host_view_stale);
    EXPECT_EQ(s.plan.num_tokens_real, s.arrays.qsl_device[s.plan.num_reqs_real]);
    kept += s.plan.draft_budget;
    eligible += s.plan.eligible_drafts;
  }
  ASSERT_GT(steps.size(), 20u);
  EXPECT_LT(kept, eligible);
}

}  // namespace
}  // namespace dspark::sim
