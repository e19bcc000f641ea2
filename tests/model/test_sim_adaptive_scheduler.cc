// Adaptive verification inside the scheduler, as vLLM's adaptive_verification.py runs it: new
// requests at confidence 1.0, no budget padding in a graph-padded step, varlen's host split
// (compact_batch) and pre-compaction seq_lens bound, the recorded steps against a direct
// reference of vLLM's rules, and masked mode's (a what-if's) unchanged layout.
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
// verify_ms(n) = 0.1 + 0.9 n, drafts free; one request samples one token per step. A point at
// every size: below the capture limit the tables are step functions of the profiled sizes.
TimeModelParams SteepCosts() {
  TimeModelParams tp = DefaultTimeModelParams();
  tp.verify_curve_ms.clear();
  for (int n = 0; n <= 1000; ++n) tp.verify_curve_ms.push_back({static_cast<double>(n), 0.1 + 0.9 * n});
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

// No budget padding: a graph-padded step runs non-draft + B real tokens and the rest of its
// capture size is padding (vLLM's get_num_tokens returns Σ non-draft + B, and the graph pads
// that). With steep costs the budget is small, so padding is common.
TEST(AdaptiveScheduler, PaddedStepsKeepTheirPaddingAsPadding) {
  SchedulerConfig c;
  c.mode = SpecMode::kAdaptive;
  c.max_num_seqs = 8;
  const std::vector<VerifyStep> steps = RunAdaptive(c, SteepCosts(), 16, 5);
  int padded = 0, padding_left = 0;
  for (const VerifyStep& s : steps) {
    if (!s.plan.graph_padded) continue;
    ++padded;
    const int32_t nd = static_cast<int32_t>(s.arrays.request_ids.size());
    EXPECT_EQ(s.plan.num_tokens_real, nd + s.plan.draft_budget) << "step " << s.plan.index;
    EXPECT_EQ(s.arrays.qsl_device[static_cast<size_t>(nd)], s.plan.num_tokens_real);
    EXPECT_EQ(s.arrays.qsl_device.back(), s.plan.num_tokens_real);  // padding rows at the real total
    padding_left += s.plan.num_tokens > s.plan.num_tokens_real && s.plan.draft_budget < s.plan.eligible_drafts;
  }
  EXPECT_GT(padded, 10);
  EXPECT_GT(padding_left, 0);  // steps that pruned drafts yet left padding unfilled
}

// Varlen: the host knows the total and B; its split is compact_batch's (B / nv per
// verification row, the first B % nv one more, no cap; the drafts as scheduled when B covers
// them), and its seq_lens bound is the pre-compaction num_computed + 1 + eligible, never below
// the device's.
TEST(AdaptiveScheduler, VarlenHostHoldsCompactBatchSplitAndTheUpperBound) {
  SchedulerConfig c;
  c.mode = SpecMode::kAdaptive;
  c.cuda_graphs = false;
  c.max_num_seqs = 8;
  const std::vector<VerifyStep> steps = RunAdaptive(c, SteepCosts(), 16, 8);
  int stale = 0, uncapped = 0;
  for (const VerifyStep& s : steps) {
    const StepArrays& a = s.arrays;
    const int32_t nd = s.plan.step_case == StepCase::kMixed ? s.plan.num_decodes : s.plan.num_reqs_real;
    EXPECT_EQ(a.qsl_host.back(), a.qsl_device.back());
    std::vector<int32_t> drafts(static_cast<size_t>(nd)), host(static_cast<size_t>(nd));
    int32_t nv = 0, total = 0;
    for (int32_t r = 0; r < nd; ++r) {
      const int32_t dev_kept = a.qsl_device[r + 1] - a.qsl_device[r] - 1;
      // seq_host - seq_dev = eligible - kept on the device
      drafts[r] = dev_kept + a.seq_lens_host[r] - a.seq_lens_device[r];
      host[r] = a.qsl_host[r + 1] - a.qsl_host[r] - 1;
      EXPECT_GE(a.seq_lens_host[r], a.seq_lens_device[r]);
      if (drafts[r] > 0) EXPECT_EQ(nv, r) << "verification rows lead the batch";
      nv += drafts[r] > 0;
      total += drafts[r];
    }
    const int32_t b = s.plan.draft_budget;
    for (int32_t r = 0; r < nd; ++r) {
      const int32_t want = b == total ? drafts[r] : drafts[r] == 0 ? 0 : b / nv + (r < b % nv);
      EXPECT_EQ(host[r], want) << "step " << s.plan.index << " row " << r;
      uncapped += host[r] > drafts[r];
    }
    stale += a.qsl_host != a.qsl_device;
  }
  EXPECT_GT(stale, 0);
  EXPECT_GT(uncapped, 0);  // some host rows hold more drafts than were scheduled for them
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
