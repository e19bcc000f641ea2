// sim/observe/invariants on real runs: whole runs of the presets pass every check on every step;
// a real step's row arrays, broken after they passed, fail CheckRows with the exact message; and
// `run --check-invariants` reports the section.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/model/acceptance.h"
#include "sim/model/time_model.h"
#include "sim/observe/invariants.h"
#include "sim/studies/run.h"
#include "sim/studies/workload.h"
#include "tests/common/temp_folders.h"
#include "tests/observe/invariant_fixtures.h"

namespace dspark::sim {
namespace {

using invariant_test::SmallConfig;

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
  std::ifstream summary_file(std::filesystem::path(config->out_dir) / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(summary_file);
  const nlohmann::json& inv = summary["invariants"];
  EXPECT_TRUE(inv["ok"].get<bool>());
  EXPECT_EQ(inv["steps_checked"].get<int64_t>(), result->steps);
  EXPECT_EQ(inv["kv_checks"].get<int64_t>(), result->steps);
  EXPECT_EQ(inv["requests_finished"].get<int64_t>(), 24);
}

}  // namespace
}  // namespace dspark::sim
