// sim/invariants: every check fails on a deliberately broken plan, KV state, row array or
// request event sequence, with the exact message; and whole runs of the presets pass.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/model/acceptance.h"
#include "sim/studies/run.h"
#include "sim/engine/engine.h"
#include "sim/observe/invariants.h"
#include "sim/model/time_model.h"
#include "sim/studies/workload.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

// Adaptive, K = 5, 8 sequences, 256 tokens per step, 1024-token model length (16 blocks of
// 64). Capture sizes: max = min(8 * 6 * 2, 512) = 96, multiples of 6 up to it.
SchedulerConfig SmallConfig(SpecMode mode = SpecMode::kAdaptive) {
  SchedulerConfig c;
  c.mode = mode;
  c.spec_k = 5;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 256;
  c.max_model_len = 1024;
  c.block_size = 64;
  c.cuda_graphs = true;
  return c;
}

// A valid adaptive verification: 3 decodes, 15 eligible drafts, B = 4, so M = 7 tokens, padded
// to the capture size 12 with R = max(3, 12 / 6) = 3.
StepPlan AdaptiveVerifyPlan() {
  StepPlan p;
  p.index = 7;
  p.start_s = 1.0;
  p.end_s = 1.001;
  p.step_case = StepCase::kAdaptiveVerify;
  p.draft_step = false;
  p.graph_padded = true;
  p.host_view_stale = true;
  p.num_reqs_real = 3;
  p.num_reqs = 3;
  p.num_tokens_real = 7;
  p.num_tokens = 12;
  p.num_decodes = 3;
  p.num_decode_tokens = 12;
  p.num_prefills = 0;
  p.num_prefill_tokens = 0;
  p.capacity = 256;
  p.bt_width = 16;
  p.bt_stride = 16;
  p.draft_budget = 4;
  p.eligible_drafts = 15;
  return p;
}

// A valid chunked prefill of two requests, 200 tokens: unpadded (it has prefills).
StepPlan PrefillPlan() {
  StepPlan p = AdaptiveVerifyPlan();
  p.step_case = StepCase::kChunkedPrefill;
  p.graph_padded = false;
  p.host_view_stale = false;
  p.num_reqs_real = p.num_reqs = 2;
  p.num_tokens_real = p.num_tokens = 200;
  p.num_decodes = 0;
  p.num_decode_tokens = 0;
  p.num_prefills = 2;
  p.num_prefill_tokens = 200;
  p.draft_budget = -1;
  p.eligible_drafts = 0;
  return p;
}

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
  p.start_s = 2.25;  // before the previous end, 2.5
  p.end_s = 3.0;
  EXPECT_EQ(back_in_time.OnStep(p).message(),
            "invariant violated at step 1: start_s = 2.250000000, end_s = 3.000000000; the previous step ended "
            "at 2.500000000");
}

// KV: 8 blocks, block 0 the null page; free 5..7, request 10 holds 1, 2; request 11 holds 3, 4.
struct KvState {
  std::vector<int32_t> free = {7, 6, 5};
  std::vector<int32_t> a = {1, 2};
  std::vector<int32_t> b = {3, 4};
  KvView View() const {
    KvView v;
    v.num_blocks = 8;
    v.free_blocks = &free;
    v.holders = {{10, &a}, {11, &b}};
    return v;
  }
};

TEST(InvariantKv, APartitionPasses) {
  InvariantChecker checker(SmallConfig());
  KvState kv;
  EXPECT_TRUE(checker.CheckKv(3, kv.View()).ok());
  kv.a.clear();  // released blocks back on the free list
  kv.free = {7, 6, 5, 2, 1};
  EXPECT_TRUE(checker.CheckKv(4, kv.View()).ok());
}

struct BrokenKv {
  std::string name;
  std::function<void(KvState&)> mutate;
  std::string message;
};

void PrintTo(const BrokenKv& b, std::ostream* os) { *os << b.name; }

class InvariantKvFails : public ::testing::TestWithParam<BrokenKv> {};

TEST_P(InvariantKvFails, WithTheExactMessage) {
  InvariantChecker checker(SmallConfig());
  KvState kv;
  ASSERT_TRUE(checker.CheckKv(2, kv.View()).ok());  // the scratch from a good check must not hide a bad one
  GetParam().mutate(kv);
  const absl::Status s = checker.CheckKv(3, kv.View());
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(std::string(s.message()), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, InvariantKvFails,
    ::testing::Values(
        BrokenKv{"leaked_block", [](KvState& kv) { kv.free = {7, 6}; },
                 "invariant violated at step 3: kv: free 2 + held by running requests 4 = 6 blocks, the pool has 7 "
                 "usable (1..7); block 5 is neither free nor held (leaked)"},
        BrokenKv{"finished_request_keeps_its_blocks",  // request 10 left the running list holding 1, 2
                 [](KvState& kv) { kv.a.clear(); },
                 "invariant violated at step 3: kv: free 3 + held by running requests 2 = 5 blocks, the pool has 7 "
                 "usable (1..7); block 1 is neither free nor held (leaked)"},
        BrokenKv{"block_owned_twice", [](KvState& kv) { kv.b = {3, 2}; kv.free = {7, 6, 5, 4}; },
                 "invariant violated at step 3: kv: block 2 owned by two requests (ids 10 and 11)"},
        BrokenKv{"held_and_free", [](KvState& kv) { kv.b = {3, 4, 5}; },
                 "invariant violated at step 3: kv: block 5 is held by request id 11 and also on the free list"},
        BrokenKv{"twice_on_the_free_list", [](KvState& kv) { kv.free = {7, 6, 5, 6}; },
                 "invariant violated at step 3: kv: block 6 is twice on the free list"},
        BrokenKv{"null_block_handed_out", [](KvState& kv) { kv.a = {0, 1, 2}; },
                 "invariant violated at step 3: kv: request id 10 holds block 0, outside the usable blocks 1..7"},
        BrokenKv{"null_block_on_the_free_list", [](KvState& kv) { kv.free = {7, 6, 5, 0}; },
                 "invariant violated at step 3: kv: free list holds block 0, outside the usable blocks 1..7"},
        BrokenKv{"block_past_the_pool", [](KvState& kv) { kv.b = {3, 4, 8}; },
                 "invariant violated at step 3: kv: request id 11 holds block 8, outside the usable blocks 1..7"}),
    [](const ::testing::TestParamInfo<BrokenKv>& info) { return info.param.name; });

TEST(InvariantKv, TooManyRunningRequests) {
  SchedulerConfig c = SmallConfig();
  c.max_num_seqs = 1;
  InvariantChecker checker(c);
  KvState kv;
  EXPECT_EQ(checker.CheckKv(5, kv.View()).message(),
            "invariant violated at step 5: running requests = 2 > max_num_seqs = 1");
}

// Request events: three requests with output lengths 3, 1, 2 (ids 10, 11, 12).
class InvariantEvents : public ::testing::Test {
 protected:
  void SetUp() override {
    workload_ = {{10, 0.0, 100, 3, {}}, {11, 0.0, 100, 1, {}}, {12, 0.0, 100, 2, {}}};
    checker_.Reset(workload_);
    for (int32_t r = 0; r < 3; ++r) checker_.OnArrival(r, 0.0);
    Step(0);
  }
  void Step(int64_t index) {
    StepPlan p = PrefillPlan();
    p.index = index;
    p.start_s = index;
    p.end_s = index + 0.5;
    ASSERT_TRUE(checker_.OnStep(p).ok()) << checker_.first_violation();
  }
  // Finishes every request properly (tokens, then finish) from step 1 on.
  void FinishAll() {
    Step(1);
    checker_.OnTokens(0, 1.5, 3);
    checker_.OnFinished(0, 1.5);
    checker_.OnTokens(1, 1.5, 1);
    checker_.OnFinished(1, 1.5);
    checker_.OnTokens(2, 1.5, 2);
    checker_.OnFinished(2, 1.5);
  }
  std::vector<RequestSpec> workload_;
  InvariantChecker checker_{SmallConfig()};
};

TEST_F(InvariantEvents, EveryRequestFinishedOncePasses) {
  FinishAll();
  EXPECT_TRUE(checker_.ok()) << checker_.first_violation();
  EXPECT_TRUE(checker_.CheckAllFinished().ok());
  EXPECT_EQ(checker_.requests_finished(), 3);
  nlohmann::json section;
  EXPECT_TRUE(checker_.Finish(&section).ok());
  EXPECT_TRUE(section["ok"].get<bool>());
  EXPECT_TRUE(section["first_violation"].is_null());
}

TEST_F(InvariantEvents, DuplicatedFinish) {
  FinishAll();
  Step(2);
  checker_.OnFinished(1, 2.5);
  EXPECT_FALSE(checker_.ok());
  EXPECT_EQ(checker_.first_violation().message(),
            "invariant violated at step 2: request id 11 finished twice (first at step 1)");
  // The run stops at the next step, and Finish reports the first violation.
  StepPlan p = PrefillPlan();
  p.index = 3;
  p.start_s = 3.0;
  p.end_s = 3.5;
  EXPECT_EQ(checker_.OnStep(p), checker_.first_violation());
  nlohmann::json section;
  EXPECT_EQ(checker_.Finish(&section), checker_.first_violation());
  EXPECT_FALSE(section["ok"].get<bool>());
  EXPECT_EQ(section["first_violation"].get<std::string>(),
            "invariant violated at step 2: request id 11 finished twice (first at step 1)");
}

TEST_F(InvariantEvents, FinishedShortOfItsOutput) {
  Step(1);
  checker_.OnTokens(0, 1.5, 2);
  checker_.OnFinished(0, 1.5);
  EXPECT_EQ(checker_.first_violation().message(),
            "invariant violated at step 1: request id 10 finished with 2 tokens, output_len = 3");
}

TEST_F(InvariantEvents, MoreTokensThanItsOutput) {
  Step(1);
  checker_.OnTokens(2, 1.5, 3);
  EXPECT_EQ(checker_.first_violation().message(),
            "invariant violated at step 1: request id 12 emitted 3 tokens (3 in all), output_len = 2");
}

TEST_F(InvariantEvents, TokensAfterFinishing) {
  FinishAll();
  Step(2);
  checker_.OnTokens(1, 2.5, 1);
  EXPECT_EQ(checker_.first_violation().message(),
            "invariant violated at step 2: request id 11 emitted 1 tokens while finished");
}

TEST_F(InvariantEvents, PreemptedAfterFinishing) {
  FinishAll();
  checker_.OnPreempted(0, 1.5);
  EXPECT_EQ(checker_.first_violation().message(),
            "invariant violated at step 2: request id 10 preempted while finished");
}

TEST_F(InvariantEvents, PreemptionWhileAnAdaptiveDraftIsPlanned) {
  checker_.OnPreempted(1, 0.5);
  checker_.OnPreempted(2, 0.5);
  StepPlan p = AdaptiveVerifyPlan();
  p.index = 1;
  p.start_s = 1.0;
  p.end_s = 1.5;
  p.step_case = StepCase::kAdaptiveDraft;
  p.draft_step = true;
  p.eligible_drafts = 0;
  EXPECT_EQ(std::string(checker_.OnStep(p).message()),
            "invariant violated at step 1: request id 11 preempted while an adaptive draft step was planned (the "
            "host cannot know the step's token total without the dropped request's kept-draft count)");
}

TEST_F(InvariantEvents, PreemptionBeforeATargetStepPasses) {
  checker_.OnPreempted(1, 0.5);
  StepPlan p = AdaptiveVerifyPlan();
  p.index = 1;
  p.start_s = 1.0;
  p.end_s = 1.5;
  EXPECT_TRUE(checker_.OnStep(p).ok()) << checker_.first_violation();
  p.index = 2;  // the preemption is not carried over to the next step
  p.start_s = 2.0;
  p.end_s = 2.5;
  p.step_case = StepCase::kAdaptiveDraft;
  p.draft_step = true;
  p.eligible_drafts = 0;
  EXPECT_TRUE(checker_.OnStep(p).ok()) << checker_.first_violation();
}

TEST_F(InvariantEvents, SubmittedTwice) {
  checker_.OnArrival(2, 0.5);
  EXPECT_EQ(checker_.first_violation().message(), "invariant violated at step 1: request id 12 submitted twice");
}

TEST_F(InvariantEvents, NeverFinished) {
  Step(1);
  checker_.OnTokens(0, 1.5, 3);
  checker_.OnFinished(0, 1.5);
  checker_.OnTokens(2, 1.5, 2);
  checker_.OnFinished(2, 1.5);
  EXPECT_TRUE(checker_.ok());
  EXPECT_EQ(checker_.CheckAllFinished().message(),
            "invariant violated at step 1: end of run: request id 11 never finished (2 of 3 requests finished)");
  nlohmann::json section;
  EXPECT_EQ(checker_.Finish(&section).message(),
            "invariant violated at step 1: end of run: request id 11 never finished (2 of 3 requests finished)");
  EXPECT_EQ(section["violations"].get<int64_t>(), 1);
}

TEST_F(InvariantEvents, EndOfRunNeedsEveryBlockFree) {
  FinishAll();
  KvState kv;
  EXPECT_EQ(checker_.CheckEndOfRun(kv.View()).message(),
            "invariant violated at step 1: end of run: request id 10 still holds 2 KV blocks");
  kv.a.clear();
  kv.b.clear();
  KvView view = kv.View();
  view.holders.clear();
  EXPECT_EQ(checker_.CheckEndOfRun(view).message(),
            "invariant violated at step 1: kv: free 3 + held by running requests 0 = 3 blocks, the pool has 7 "
            "usable (1..7); block 1 is neither free nor held (leaked)");
  kv.free = {7, 6, 5, 4, 3, 2, 1};
  EXPECT_TRUE(checker_.CheckEndOfRun(view).ok()) << checker_.CheckEndOfRun(view);
}

// ---- Whole runs: the scheduler passes every check on every step.

struct RunCase {
  std::string name;
  std::string preset;
  SpecMode mode;
  int64_t requests;
  int32_t concurrency;
  int32_t num_kv_blocks;  // 0: auto
  bool graphs;
};

void PrintTo(const RunCase& c, std::ostream* os) { *os << c.name; }

class InvariantRuns : public ::testing::TestWithParam<RunCase> {};

TEST_P(InvariantRuns, PassEveryStep) {
  const RunCase& rc = GetParam();
  RunConfig config;
  config.seed = 11;
  config.workload = rc.preset;
  config.num_requests = rc.requests;
  config.concurrency = rc.concurrency;
  config.scheduler.mode = rc.mode;
  config.scheduler.max_num_seqs = 16;
  config.scheduler.max_num_batched_tokens = 2048;
  config.scheduler.num_kv_blocks = rc.num_kv_blocks;
  config.scheduler.cuda_graphs = rc.graphs;
  config.scheduler.bt_stride_pad = 3;
  config.impls = {Impl::kFused};
  config.check = false;
  ASSERT_TRUE(config.Validate().ok()) << config.Validate();
  auto workload = BuildWorkload(config);
  ASSERT_TRUE(workload.ok()) << workload.status();
  const AcceptanceModel acceptance(*AcceptancePreset(workload->acceptance_preset, 5), 5);
  const TimeModel time_model(DefaultTimeModelParams());
  EngineOptions options;
  options.concurrency = workload->concurrency;
  Engine engine(config.scheduler, workload->requests, acceptance, time_model, options, config.seed);
  InvariantOptions inv;
  inv.rows_every = 1;
  InvariantChecker checker(config.scheduler, inv);
  engine.AddObserver(&checker);
  const absl::Status run = engine.Run();
  ASSERT_TRUE(run.ok()) << run;
  nlohmann::json section;
  ASSERT_TRUE(checker.Finish(&section).ok()) << checker.first_violation();
  EXPECT_GT(engine.steps(), 0);
  EXPECT_EQ(checker.steps_checked(), engine.steps());
  EXPECT_EQ(checker.kv_checks(), engine.steps());
  EXPECT_EQ(checker.row_checks(), engine.steps());
  EXPECT_EQ(checker.requests_finished(), rc.requests);
  EXPECT_EQ(section["requests_finished"].get<int64_t>(), rc.requests);
  if (rc.num_kv_blocks > 0) EXPECT_GT(engine.scheduler().counters().preemptions, 0) << "the tight pool never preempted";
}

INSTANTIATE_TEST_SUITE_P(
    Presets, InvariantRuns,
    ::testing::Values(RunCase{"speed_8k_adaptive", "speed-8k", SpecMode::kAdaptive, 6, 4, 0, true},
                      RunCase{"chat_adaptive", "chat", SpecMode::kAdaptive, 80, 16, 0, true},
                      RunCase{"chat_adaptive_tight_kv", "chat", SpecMode::kAdaptive, 80, 16, 300, true},
                      RunCase{"chat_dspark_eager", "chat", SpecMode::kDSpark, 60, 8, 0, false},
                      RunCase{"chat_dspark_tight_kv", "chat", SpecMode::kDSpark, 60, 16, 300, true},
                      RunCase{"chat_plain_decode", "chat", SpecMode::kNone, 60, 16, 0, true},
                      RunCase{"batch1_512_adaptive", "batch1-512", SpecMode::kAdaptive, 3, 1, 0, true}),
    [](const ::testing::TestParamInfo<RunCase>& info) { return info.param.name; });

// CheckRows on a real step whose arrays were then broken.
class BreakRowsObserver final : public StepObserver {
 public:
  BreakRowsObserver(const Engine* engine, InvariantChecker* checker, std::function<bool(const StepPlan&)> pick,
                    std::function<void(StepArrays&)> breaker)
      : engine_(engine), checker_(checker), pick_(std::move(pick)), breaker_(std::move(breaker)) {}
  absl::string_view name() const override { return "break_rows"; }
  absl::Status OnStep(const StepPlan& plan) override {
    if (done_ || !pick_(plan)) return absl::OkStatus();
    auto arrays = plan.Arrays();
    if (!arrays.ok()) return arrays.status();
    const Scheduler& s = engine_->scheduler();
    KvView view;
    view.num_blocks = s.kv().num_blocks();
    view.free_blocks = &s.kv().free_blocks();
    for (int32_t req : s.running()) view.holders.push_back({s.request_id(req), &s.blocks_of(req)});
    const absl::Status good = checker_->CheckRows(plan, **arrays, view);
    if (!good.ok()) return good;
    StepArrays broken = **arrays;
    breaker_(broken);
    result_ = checker_->CheckRows(plan, broken, view);
    step_ = plan.index;
    done_ = true;
    return absl::OkStatus();
  }
  absl::Status result_;
  int64_t step_ = -1;

 private:
  const Engine* engine_;
  InvariantChecker* checker_;
  std::function<bool(const StepPlan&)> pick_;
  std::function<void(StepArrays&)> breaker_;
  bool done_ = false;
};

// Three requests (prompts 70, 90, 65; 4 output tokens each) in the small adaptive config; the
// first step that `pick` selects passes CheckRows, then fails it once `breaker` changed a copy.
absl::Status BreakStep(std::function<bool(const StepPlan&)> pick, std::function<void(StepArrays&)> breaker,
                       int64_t* step) {
  SchedulerConfig c = SmallConfig();
  const std::vector<RequestSpec> reqs = {{0, 0.0, 70, 4, {}}, {1, 0.0, 90, 4, {}}, {2, 0.0, 65, 4, {}}};
  const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
  const TimeModel time_model(DefaultTimeModelParams());
  Engine engine(c, reqs, acceptance, time_model, EngineOptions{}, 3);
  InvariantChecker checker(c);
  BreakRowsObserver observer(&engine, &checker, std::move(pick), std::move(breaker));
  engine.AddObserver(&observer);
  const absl::Status run = engine.Run();
  if (!run.ok()) return run;
  *step = observer.step_;
  return observer.result_;
}

absl::Status BreakFirstMultiRequestStep(std::function<void(StepArrays&)> breaker, int64_t* step) {
  return BreakStep([](const StepPlan& p) { return p.num_reqs_real >= 2; }, std::move(breaker), step);
}

TEST(InvariantRows, ForeignSlot) {
  int64_t step = -1;
  // Step 0 prefills requests 0 (70 tokens: blocks 1, 2), 1 (90: blocks 3, 4) and 2 (65: 5, 6).
  const absl::Status s = BreakFirstMultiRequestStep([](StepArrays& a) { a.slot_mapping[75] = 64 * 1 + 5; }, &step);
  ASSERT_EQ(step, 0);
  EXPECT_EQ(s.message(),
            "invariant violated at step 0: slot_mapping[75] = 69, expected 197 (request id 1, position 5, block 3)");
}

TEST(InvariantRows, RequestScheduledTwice) {
  int64_t step = -1;
  const absl::Status s = BreakFirstMultiRequestStep([](StepArrays& a) { a.request_ids[2] = a.request_ids[0]; }, &step);
  ASSERT_EQ(step, 0);
  EXPECT_EQ(s.message(), "invariant violated at step 0: request id 0 scheduled twice (rows 0 and 2)");
}

TEST(InvariantRows, ContextPastModelLength) {
  int64_t step = -1;
  const absl::Status s = BreakFirstMultiRequestStep([](StepArrays& a) { a.seq_lens_device[1] = 1025; }, &step);
  EXPECT_EQ(s.message(),
            "invariant violated at step 0: seq_lens_device[1] = 1025 (request id 1), expected in [query length 90, "
            "max_model_len 1024]");
}

TEST(InvariantRows, BlockTableDisagreesWithTheOwner) {
  int64_t step = -1;
  const absl::Status s =
      BreakFirstMultiRequestStep([](StepArrays& a) { a.block_table[2 * 16 + 1] = 4; }, &step);
  EXPECT_EQ(s.message(), "invariant violated at step 0: block_table[2, 1] = 4, request id 2 holds block 6 there");
}

TEST(InvariantRows, HostTotalDiffersFromTheDevice) {
  int64_t step = -1;
  const absl::Status s = BreakFirstMultiRequestStep([](StepArrays& a) { a.qsl_host.back() -= 2; }, &step);
  EXPECT_EQ(s.message(), "invariant violated at step 0: qsl total: device 225, host 223; expected num_tokens_real = 225");
}

TEST(InvariantRows, ScheduledRowWithoutAToken) {
  int64_t step = -1;
  const absl::Status s = BreakFirstMultiRequestStep([](StepArrays& a) { a.qsl_device[2] = a.qsl_device[1]; }, &step);
  EXPECT_EQ(s.message(), "invariant violated at step 0: row 1 (request id 1): query length 0");
}

TEST(InvariantRows, PaddingTokenWithASlot) {
  int64_t step = -1;
  // Step 1 is the adaptive draft of the three fresh requests: 3 x K = 15 tokens, padded to 18.
  const absl::Status s = BreakStep([](const StepPlan& p) { return p.graph_padded && p.num_tokens > p.num_tokens_real; },
                                   [](StepArrays& a) { a.slot_mapping[15] = 0; }, &step);
  ASSERT_EQ(step, 1);
  EXPECT_EQ(s.message(), "invariant violated at step 1: slot_mapping[15] = 0 for a padding token, expected -1");
}

// `run --check-invariants` registers the checker: summary.json gets its section.
TEST(InvariantRun, RunCommandReportsTheSection) {
  std::vector<std::string> args = {"run", "--workload", "chat", "--num-requests", "24", "--concurrency", "8",
                                   "--no-check", "--check-invariants", "--max-num-seqs", "8",
                                   "--max-num-batched-tokens", "512", "--num-kv-blocks", "400", "--out",
                                   testing_util::ProcessTempDir("invariants", "run", false)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::string help;
  auto config = ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->check_invariants);
  auto result = ExecuteRun(*config);
  ASSERT_TRUE(result.ok()) << result.status();
  const nlohmann::json& inv = result->summary["invariants"];
  EXPECT_TRUE(inv["ok"].get<bool>());
  EXPECT_EQ(inv["steps_checked"].get<int64_t>(), result->steps);
  EXPECT_EQ(inv["kv_checks"].get<int64_t>(), result->steps);
  EXPECT_EQ(inv["requests_finished"].get<int64_t>(), 24);
}

}  // namespace
}  // namespace dspark::sim
