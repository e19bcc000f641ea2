// The metadata check in several processes (run --jobs, sim/exec/check_process.h): the same
// tallies as one process, a process that dies fails the step it was in (naming how it ended)
// and no later one, and a process ignores the console's SIGINT (the run decides when to stop).
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/engine.h"
#include "sim/exec/check_group.h"
#include "sim/exec/cpu_executor.h"
#include "tests/common/engine_inputs.h"

namespace dspark::sim {
namespace {

struct SmallRun : testing_util::EngineInputs {
  SmallRun() : EngineInputs(5) {
    config.max_num_seqs = 8;
    config.max_num_batched_tokens = 512;
    config.max_model_len = 2048;
    config.mode = SpecMode::kAdaptive;
    for (int64_t i = 0; i < 12; ++i)
      requests.push_back({i, 0.001 * static_cast<double>(i), 40 + 37 * static_cast<int32_t>(i), 40, {}});
  }
};

// Runs `after` on the executor at the start of step `at` (an executor added before the check).
class AtStep final : public StepExecutor {
 public:
  AtStep(int64_t at, std::function<void()> fn) : at_(at), fn_(std::move(fn)) {}
  absl::string_view name() const override { return "at_step"; }
  absl::Status Execute(const StepPlan& plan, const StepArrays&) override {
    if (plan.index == at_) fn_();
    return absl::OkStatus();
  }

 private:
  int64_t at_;
  std::function<void()> fn_;
};

class CountingObserver final : public StepObserver {
 public:
  absl::string_view name() const override { return "count"; }
  absl::Status OnStep(const StepPlan&) override {
    ++steps;
    return absl::OkStatus();
  }
  int64_t steps = 0;
};

// Whether fork may be used here: a process running other threads (a CUDA context's, in the GPU
// test binary) checks every group itself instead, which these tests then hold it to.
bool ExpectProcesses(const CpuExecutor& check, int32_t want) {
  if (check.processes() == want) return true;
  EXPECT_EQ(check.processes(), 1) << "a check either starts every process asked for or none";
  return false;
}

nlohmann::json Tally(int32_t jobs, int64_t* steps) {
  SmallRun run;
  Engine engine(run.config, run.requests, run.acceptance, run.time_model, EngineOptions{}, 7);
  CpuExecutor check(ImplsOfModel(ModelKind::kV41), ModelConsts{}, jobs);
  ExpectProcesses(check, std::min<int32_t>(jobs, static_cast<int32_t>(ImplsOfModel(ModelKind::kV41).size())));
  engine.AddExecutor(&check);
  const absl::Status s = engine.Run();
  EXPECT_TRUE(s.ok()) << s;
  *steps = engine.steps();
  nlohmann::json section;
  EXPECT_TRUE(check.Finish(&section).ok());
  return section;
}

TEST(CheckProcess, AnyNumberOfProcessesTalliesTheSame) {
  int64_t steps1 = 0;
  const nlohmann::json one = Tally(1, &steps1);
  ASSERT_GT(steps1, 20);
  ASSERT_GT(one["impls"].size(), 3u);
  for (int32_t jobs : {2, 3, 6, 9}) {
    int64_t steps = 0;
    EXPECT_EQ(Tally(jobs, &steps).dump(1), one.dump(1)) << "--jobs " << jobs;
    EXPECT_EQ(steps, steps1);
  }
}

TEST(CheckProcess, GroupsAreConsecutiveAndEven) {
  const std::vector<Impl>& all = ImplsOfModel(ModelKind::kV41);
  for (int32_t parts : {0, 1, 2, 3, 4, 100}) {
    const auto groups = SplitIntoGroups(all, parts);
    ASSERT_EQ(groups.size(), std::min<size_t>(all.size(), static_cast<size_t>(std::max(parts, 1))));
    std::vector<Impl> joined;
    size_t smallest = all.size(), largest = 0;
    for (const auto& g : groups) {
      joined.insert(joined.end(), g.begin(), g.end());
      smallest = std::min(smallest, g.size());
      largest = std::max(largest, g.size());
    }
    EXPECT_EQ(joined, all) << parts;
    EXPECT_LE(largest - smallest, 1u) << parts;
  }
  EXPECT_EQ(SplitIntoGroups({}, 3).size(), 1u);
}

TEST(CheckProcess, AProcessThatDiesFailsTheStepItWasIn) {
  SmallRun run;
  Engine engine(run.config, run.requests, run.acceptance, run.time_model, EngineOptions{}, 7);
  CpuExecutor check(ImplsOfModel(ModelKind::kV41), ModelConsts{}, 2);
  if (!ExpectProcesses(check, 2)) GTEST_SKIP() << "this test process runs threads: the check ran in one process";
  const pid_t pid = check.process_ids().at(0);
  AtStep killer(5, [pid] { kill(pid, SIGKILL); });
  CountingObserver observer;
  engine.AddExecutor(&killer);
  engine.AddExecutor(&check);
  engine.AddObserver(&observer);
  const absl::Status s = engine.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(std::string(s.message()).find("step 5 ("), std::string::npos) << s;
  EXPECT_NE(std::string(s.message()).find("killed by signal 9"), std::string::npos) << s;
  EXPECT_EQ(observer.steps, 5) << "the steps before the failure, and only those, were shown";
}

TEST(CheckProcess, AProcessIgnoresTheConsolesInterrupt) {
  SmallRun run;
  Engine engine(run.config, run.requests, run.acceptance, run.time_model, EngineOptions{}, 7);
  CpuExecutor check(ImplsOfModel(ModelKind::kV41), ModelConsts{}, 3);
  if (!ExpectProcesses(check, 3)) GTEST_SKIP() << "this test process runs threads: the check ran in one process";
  const std::vector<pid_t> pids = check.process_ids();
  AtStep interrupt(3, [pids] {
    for (pid_t pid : pids) {
      kill(pid, SIGINT);
      kill(pid, SIGTERM);
    }
  });
  engine.AddExecutor(&interrupt);
  engine.AddExecutor(&check);
  const absl::Status s = engine.Run();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_GT(engine.steps(), 20);
}

}  // namespace
}  // namespace dspark::sim
