// The engine's stages in a step: the arrays are built once, the executors run in the order they
// were added and see those arrays, then the observers; a step an executor fails reaches no
// observer and is not committed. The registry hands executors out in their declared order.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/exec/executor_registry.h"
#include "sim/model/acceptance.h"
#include "sim/model/time_model.h"
#include "sim/workload/generators.h"
#include "tests/common/engine_inputs.h"

namespace dspark::sim {
namespace {

// One event log shared by every stage of the test, in the order the engine called them.
struct Log {
  std::vector<std::string> events;
};

class RecordingExecutor final : public StepExecutor {
 public:
  RecordingExecutor(std::string tag, Log* log, int64_t fail_at = -1)
      : tag_(std::move(tag)), log_(log), fail_at_(fail_at) {}
  absl::string_view name() const override { return tag_; }
  absl::Status Execute(const StepPlan& plan, const StepArrays& arrays) override {
    absl::StatusOr<const StepArrays*> again = plan.Arrays();
    if (!again.ok() || *again != &arrays)
      return absl::InternalError("the executor got arrays other than the plan's");
    if (static_cast<int32_t>(arrays.qsl_device.size()) != plan.num_reqs + 1)
      return absl::InternalError("qsl_device is not [num_reqs + 1]");
    log_->events.push_back(tag_ + "@" + std::to_string(plan.index));
    if (plan.index == fail_at_) return absl::InternalError(tag_ + " fails step " + std::to_string(plan.index));
    return absl::OkStatus();
  }

 private:
  std::string tag_;
  Log* log_;
  int64_t fail_at_;
};

class RecordingObserver final : public StepObserver {
 public:
  explicit RecordingObserver(Log* log) : log_(log) {}
  absl::string_view name() const override { return "observer"; }
  absl::Status OnStep(const StepPlan& plan) override {
    log_->events.push_back("observer@" + std::to_string(plan.index));
    return absl::OkStatus();
  }

 private:
  Log* log_;
};

struct SmallRun : testing_util::EngineInputs {
  SmallRun() : EngineInputs(3) {
    config.max_num_seqs = 4;
    config.max_num_batched_tokens = 256;
    config.max_model_len = 1024;
    for (int64_t i = 0; i < 3; ++i) requests.push_back({i, 0.0, 17 + static_cast<int32_t>(i), 7, {}});
  }
};

TEST(EngineExecutors, RunInOrderOnTheStepsArraysBeforeTheObservers) {
  SmallRun run;
  Engine engine(run.config, run.requests, run.acceptance, run.time_model, EngineOptions{}, 1);
  Log log;
  RecordingObserver observer(&log);
  RecordingExecutor first("first", &log), second("second", &log);
  engine.AddObserver(&observer);  // added first, still runs after the executors
  engine.AddExecutor(&first);
  engine.AddExecutor(&second);
  ASSERT_TRUE(engine.Run().ok());
  ASSERT_GT(engine.steps(), 2);
  ASSERT_EQ(static_cast<int64_t>(log.events.size()), 3 * engine.steps());
  for (int64_t s = 0; s < engine.steps(); ++s) {
    const std::string at = "@" + std::to_string(s);
    EXPECT_EQ(log.events[3 * s], "first" + at);
    EXPECT_EQ(log.events[3 * s + 1], "second" + at);
    EXPECT_EQ(log.events[3 * s + 2], "observer" + at);
  }
}

TEST(EngineExecutors, AFailedStepReachesNoObserverAndIsNotCommitted) {
  for (int64_t fail_at : {0, 1, 2}) {
    SCOPED_TRACE(fail_at);
    SmallRun run;
    Engine engine(run.config, run.requests, run.acceptance, run.time_model, EngineOptions{}, 1);
    Log log;
    RecordingObserver observer(&log);
    RecordingExecutor failing("failing", &log, fail_at), after("after", &log);
    engine.AddExecutor(&failing);
    engine.AddExecutor(&after);
    engine.AddObserver(&observer);
    const absl::Status s = engine.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
    EXPECT_EQ(std::string(s.message()), "failing fails step " + std::to_string(fail_at));
    EXPECT_EQ(engine.steps(), fail_at);
    ASSERT_FALSE(log.events.empty());
    EXPECT_EQ(log.events.back(), "failing@" + std::to_string(fail_at)) << "nothing runs after the failure";
    EXPECT_EQ(static_cast<int64_t>(log.events.size()), 3 * fail_at + 1);
  }
}

TEST(ExecutorRegistry, HandsOutTheBuiltInsInTheirDeclaredOrder) {
  std::vector<std::string> names;
  int last_order = -1;
  for (const ExecutorRegistration& r : RegisteredExecutors()) {
    EXPECT_GE(r.order, last_order) << r.name;
    last_order = r.order;
    names.push_back(r.name);
  }
  EXPECT_TRUE(HasExecutor("metadata-check"));
  EXPECT_FALSE(HasExecutor("no-such-executor"));
  const auto cpu = std::find(names.begin(), names.end(), "metadata-check");
  const auto gpu = std::find(names.begin(), names.end(), "gpu-executor");
  if (gpu != names.end()) EXPECT_LT(gpu, cpu) << "the GPU executor runs before the CPU check";
}

TEST(ExecutorRegistry, TheCpuCheckFollowsTheRequest) {
  for (const ExecutorRegistration& r : RegisteredExecutors()) {
    if (r.name != "metadata-check") continue;
    ExecutorRequest request;
    request.impls = {Impl::kFused};
    request.check = false;
    absl::StatusOr<std::unique_ptr<StepExecutor>> off = r.factory(request);
    ASSERT_TRUE(off.ok()) << off.status();
    EXPECT_EQ(*off, nullptr) << "--no-check builds no CPU executor";
    request.check = true;
    absl::StatusOr<std::unique_ptr<StepExecutor>> on = r.factory(request);
    ASSERT_TRUE(on.ok()) << on.status();
    ASSERT_NE(*on, nullptr);
    EXPECT_EQ((*on)->name(), "metadata_check");
    return;
  }
  FAIL() << "no metadata-check executor registered";
}

}  // namespace
}  // namespace dspark::sim
