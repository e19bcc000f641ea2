// sim/observe/invariants on request events: every request finished once, with its output, passes;
// duplicated, early, late or missing events and blocks held at the end fail with the exact message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/observe/invariants.h"
#include "tests/observe/invariant_fixtures.h"

namespace dspark::sim {
namespace {

using invariant_test::AdaptiveVerifyPlan;
using invariant_test::KvState;
using invariant_test::PrefillPlan;
using invariant_test::SmallConfig;

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

}  // namespace
}  // namespace dspark::sim
