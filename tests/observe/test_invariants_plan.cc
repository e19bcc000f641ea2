// sim/observe/invariants on step plans: the capture sizes follow the design rule, valid plans
// pass, and every broken plan, and a step numbering or clock going backwards, fails with the
// exact message.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/observe/invariants.h"
#include "tests/observe/invariant_fixtures.h"

namespace dspark::sim {
namespace {

using invariant_test::AdaptiveVerifyPlan;
using invariant_test::PrefillPlan;
using invariant_test::SmallConfig;

TEST(DesignCaptureSizes, FollowTheDesignRule) {
  EXPECT_EQ(DesignCaptureSizes(8, 256, 5),
            (std::vector<int32_t>{6, 12, 18, 24, 36, 42, 48, 60, 66, 72, 84, 90, 96}));
  EXPECT_EQ(DesignCaptureSizes(3, 100, 0), (std::vector<int32_t>{1, 2, 4}));  // max = 6
  EXPECT_EQ(DesignCaptureSizes(2, 20, 5), (std::vector<int32_t>{6, 12, 18}));  // 24 > 20 dropped
  const std::vector<int32_t> big = DesignCaptureSizes(256, 16384, 5);
  EXPECT_EQ(big.back(), 516);  // 512 rounded up to a multiple of 6
  // The scheduler's own list (kernels/batch.h) agrees on a grid of limits.
  for (int32_t seqs : {1, 2, 3, 7, 17, 64, 256})
    for (int32_t tokens : {6, 20, 100, 257, 4096})
      for (int32_t k : {0, 1, 5})
        EXPECT_EQ(DesignCaptureSizes(seqs, tokens, k), GraphCaptureSizes(seqs, tokens, k))
            << seqs << " " << tokens << " " << k;
}

TEST(InvariantPlan, ValidPlansPass) {
  InvariantChecker checker(SmallConfig());
  EXPECT_TRUE(checker.CheckPlan(AdaptiveVerifyPlan()).ok()) << checker.CheckPlan(AdaptiveVerifyPlan());
  EXPECT_TRUE(checker.CheckPlan(PrefillPlan()).ok()) << checker.CheckPlan(PrefillPlan());
}

struct BrokenPlan {
  std::string name;
  SpecMode mode;
  bool graphs;
  std::function<StepPlan()> make;
  std::string message;
};

void PrintTo(const BrokenPlan& b, std::ostream* os) { *os << b.name; }

class InvariantPlanFails : public ::testing::TestWithParam<BrokenPlan> {};

TEST_P(InvariantPlanFails, WithTheExactMessage) {
  const BrokenPlan& b = GetParam();
  SchedulerConfig c = SmallConfig(b.mode);
  c.cuda_graphs = b.graphs;
  InvariantChecker checker(c);
  const absl::Status s = checker.CheckPlan(b.make());
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(std::string(s.message()), b.message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, InvariantPlanFails,
    ::testing::Values(
        BrokenPlan{"over_token_budget", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = PrefillPlan();
                     p.num_tokens_real = p.num_tokens = p.num_prefill_tokens = 300;
                     return p;
                   },
                   "invariant violated at step 7: num_tokens_real = 300 > max_num_batched_tokens = 256"},
        BrokenPlan{"over_max_num_seqs", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = PrefillPlan();
                     p.num_reqs_real = p.num_reqs = p.num_prefills = 9;
                     return p;
                   },
                   "invariant violated at step 7: num_reqs_real = 9, expected in [1, max_num_seqs = 8]"},
        BrokenPlan{"empty_step", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = PrefillPlan();
                     p.num_reqs_real = p.num_reqs = p.num_prefills = 0;
                     return p;
                   },
                   "invariant violated at step 7: num_reqs_real = 0, expected in [1, max_num_seqs = 8]"},
        BrokenPlan{"request_without_token", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = PrefillPlan();
                     p.num_reqs_real = p.num_reqs = p.num_prefills = 3;
                     p.num_tokens_real = p.num_tokens = p.num_prefill_tokens = 2;
                     return p;
                   },
                   "invariant violated at step 7: num_tokens_real = 2 < num_reqs_real = 3 (a scheduled request "
                   "without a token)"},
        BrokenPlan{"over_capacity", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = PrefillPlan();
                     p.capacity = 128;
                     return p;
                   },
                   "invariant violated at step 7: capacity = 128 < max_num_batched_tokens = 256"},
        BrokenPlan{"padded_to_the_wrong_size", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = AdaptiveVerifyPlan();
                     p.num_tokens = p.num_decode_tokens = 18;
                     return p;
                   },
                   "invariant violated at step 7: num_tokens = 18, expected the smallest capture size >= M = 7, 12"},
        BrokenPlan{"not_padded_though_it_fits", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = AdaptiveVerifyPlan();
                     p.graph_padded = false;
                     p.num_tokens = p.num_decode_tokens = 7;
                     return p;
                   },
                   "invariant violated at step 7: graph_padded = 0, expected 1 (0 prefills, M = 7, largest capture "
                   "size 96, graphs on)"},
        BrokenPlan{"padded_with_graphs_off", SpecMode::kAdaptive, false,
                   [] { return AdaptiveVerifyPlan(); },
                   "invariant violated at step 7: graph_padded = 1, expected 0 (0 prefills, M = 7, largest capture "
                   "size 96, graphs off)"},
        BrokenPlan{"padded_request_count", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = AdaptiveVerifyPlan();
                     p.num_reqs = p.num_decodes = 2;
                     return p;
                   },
                   "invariant violated at step 7: num_reqs = 2, expected max(num_reqs_real 3, N 12 / q 6) = 3"},
        BrokenPlan{"unpadded_token_count", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = PrefillPlan();
                     p.num_tokens = 204;
                     return p;
                   },
                   "invariant violated at step 7: num_tokens = 204 in an unpadded step of num_tokens_real = 200"},
        BrokenPlan{"adaptive_tokens_not_decodes_plus_budget", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = AdaptiveVerifyPlan();
                     p.draft_budget = 5;
                     return p;
                   },
                   "invariant violated at step 7: decode tokens = 7, expected decode requests 3 + draft_budget 5"},
        BrokenPlan{"budget_over_eligible", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = AdaptiveVerifyPlan();
                     p.eligible_drafts = 3;
                     return p;
                   },
                   "invariant violated at step 7: draft_budget = 4, expected in [0, eligible_drafts = 3]"},
        BrokenPlan{"verification_over_one_plus_k", SpecMode::kDSpark, true,
                   [] {
                     StepPlan p = AdaptiveVerifyPlan();
                     p.step_case = StepCase::kSpecVerify;
                     p.host_view_stale = false;
                     p.draft_budget = -1;
                     p.num_tokens_real = 19;  // 3 requests x (1 + 5) = 18 at most
                     p.num_tokens = p.num_decode_tokens = 24;
                     p.num_reqs = p.num_decodes = 4;
                     return p;
                   },
                   "invariant violated at step 7: decode tokens = 19 > 3 decode requests x 6 tokens "
                   "(dspark_verify)"},
        BrokenPlan{"draft_over_k", SpecMode::kDSpark, true,
                   [] {
                     StepPlan p = AdaptiveVerifyPlan();
                     p.step_case = StepCase::kSpecDraft;
                     p.draft_step = true;
                     p.draft_budget = -1;
                     p.eligible_drafts = 0;
                     p.num_tokens_real = 16;  // 3 requests x K = 15 at most
                     p.num_tokens = p.num_decode_tokens = 18;
                     return p;
                   },
                   "invariant violated at step 7: decode tokens = 16 > 3 decode requests x 5 tokens (dspark_draft)"},
        BrokenPlan{"plain_decode_of_two_tokens", SpecMode::kNone, true,
                   [] {
                     StepPlan p = AdaptiveVerifyPlan();
                     p.step_case = StepCase::kDecode;
                     p.host_view_stale = false;
                     p.draft_budget = -1;
                     p.eligible_drafts = 0;
                     p.num_tokens_real = 4;
                     p.num_tokens = p.num_decode_tokens = 4;
                     return p;
                   },
                   "invariant violated at step 7: decode tokens = 4 with 3 decode requests; plain decodes carry 1 "
                   "token each"},
        BrokenPlan{"draft_step_with_prefills", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = PrefillPlan();
                     p.step_case = StepCase::kAdaptiveDraft;
                     p.draft_step = true;
                     return p;
                   },
                   "invariant violated at step 7: num_prefills = 2 in a dspark_adaptive_draft step, expected 0"},
        BrokenPlan{"case_of_another_mode", SpecMode::kDSpark, true,
                   [] { return AdaptiveVerifyPlan(); },
                   "invariant violated at step 7: step_case = dspark_adaptive_verify in mode dspark"},
        BrokenPlan{"budget_in_a_prefill_step", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = PrefillPlan();
                     p.draft_budget = 0;
                     return p;
                   },
                   "invariant violated at step 7: draft_budget = 0 in a chunked_prefill step (mode adaptive), "
                   "expected -1"},
        BrokenPlan{"stale_host_view_in_a_prefill", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = PrefillPlan();
                     p.host_view_stale = true;
                     return p;
                   },
                   "invariant violated at step 7: host_view_stale = 1 in a chunked_prefill step (mode adaptive)"},
        BrokenPlan{"draft_flag_on_a_target_step", SpecMode::kAdaptive, true,
                   [] {
                     StepPlan p = AdaptiveVerifyPlan();
                     p.draft_step = true;
                     return p;
                   },
                   "invariant violated at step 7: draft_step = 1 in a dspark_adaptive_verify step"}),
    [](const ::testing::TestParamInfo<BrokenPlan>& info) { return info.param.name; });

TEST(InvariantSteps, NumberingAndTimeMustAdvance) {
  InvariantChecker checker(SmallConfig());
  const std::vector<RequestSpec> workload;
  checker.Reset(workload);
  StepPlan p = PrefillPlan();
  p.index = 0;
  ASSERT_TRUE(checker.OnStep(p).ok());
  p.index = 2;  // step 1 skipped
  p.start_s = 2.0;
  p.end_s = 2.5;
  const absl::Status s = checker.OnStep(p);
  EXPECT_EQ(s.message(), "invariant violated at step 2: step index 2 follows 0");
  EXPECT_EQ(checker.first_violation(), s);

  InvariantChecker back_in_time(SmallConfig());
  back_in_time.Reset(workload);
  p.index = 0;
  ASSERT_TRUE(back_in_time.OnStep(p).ok());
  p.index = 1;
  p.start_s = 2.25;  // before the previous end, 2.5: async scheduling overlaps them
  p.end_s = 3.0;
  EXPECT_TRUE(back_in_time.OnStep(p).ok());
  p.index = 2;
  p.start_s = 2.5;
  p.end_s = 2.75;  // outputs before the previous step's
  EXPECT_EQ(back_in_time.OnStep(p).message(),
            "invariant violated at step 2: start_s = 2.500000000, end_s = 2.750000000; the previous step started "
            "at 2.250000000 and ended at 3.000000000");
}

}  // namespace
}  // namespace dspark::sim
