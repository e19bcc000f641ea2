// A missing GPU at the command line: every GPU entry point (`run --executor gpu`, `sweep --executor
// gpu`, `bench`, `microbench`, `calibrate`), run as the real binary in a child process with
// CUDA_VISIBLE_DEVICES="" (which hides every device from the CUDA runtime), exits with a non-zero
// code and one line naming the cause (the runtime's answer, or that the build has no CUDA) and
// what to use instead, writes no result file, and never crashes. The same assertions hold on a
// machine without a GPU, in a CPU-only build, and on the H200 machine.
//
// Also, without a child process: an aborted run keeps the results of the steps that completed
// (an observer that fails a chosen step stands in for a failing GPU step; the GPU version with a
// real CUDA error is tests/robustness/test_gpu_faults_gpu.cu).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "sim/studies/run.h"
#include "sim/studies/config.h"
#include "sim/engine/step_executor.h"
#include "sim/exec/executor_registry.h"
#include "tests/common/spawn_util.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using testing_util::SpawnResult;
using testing_util::SpawnSim;

std::string Dir(const std::string& name) { return testing_util::ProcessTempDir("gpu_faults_cli", name, true); }

using testing_util::SlurpFile;

struct NoGpuCase {
  std::string name;
  std::vector<std::string> args;  // after the binary; "OUT" is replaced by the case's output path
  int exit_code;
  std::vector<std::string> says;  // substrings of the one stderr line
};

std::vector<NoGpuCase> NoGpuCases() {
  const std::vector<std::string> executor = {"--executor gpu: no CUDA device (", "use --executor cpu"};
  const std::vector<std::string> measures_run = {"no CUDA device (", "measures GPU time",
                                                 "use `dspark-sim run` for CPU mode"};
  const auto with = [](std::vector<std::string> v, const std::string& s) {
    v.insert(v.begin(), s);
    return v;
  };
  return {
      {"run", {"run", "--workload", "batch1-512", "--num-requests", "1", "--no-check", "--executor", "gpu", "--out", "OUT"},
       1, with(executor, "dspark-sim run: --executor gpu")},
      {"sweep",
       {"sweep", "--workload", "batch1-512", "--concurrency", "1", "--batch-size", "2", "--num-requests", "1",
        "--mode", "none", "--time-impl", "fused", "--executor", "gpu", "--progress", "none", "--out", "OUT"},
       1, with(executor, "dspark-sim sweep: --executor gpu")},
      {"bench", {"bench", "--reps", "10", "--min-samples", "10", "--out", "OUT"}, 2, with(measures_run, "dspark-sim bench: no CUDA device")},
      {"microbench", {"microbench", "--reps", "10", "--json", "OUT"}, 2,
       with(measures_run, "dspark-sim microbench: no CUDA device")},
      {"calibrate", {"calibrate", "--out", "OUT"}, 2, with(measures_run, "dspark-sim calibrate: no CUDA device")},
  };
}

class NoDeviceCli : public ::testing::TestWithParam<NoGpuCase> {};

TEST_P(NoDeviceCli, ExitsNonZeroWithOneLineAndWritesNothing) {
  const NoGpuCase& c = GetParam();
  if (testing_util::SimBinary().empty()) GTEST_SKIP() << "no dspark-sim binary beside the test binary";
  const std::string dir = Dir(c.name);
  const std::string out = dir + "/result";
  std::vector<std::string> args = c.args;
  std::replace(args.begin(), args.end(), std::string("OUT"), out);
  const SpawnResult r = SpawnSim(args, {{"CUDA_VISIBLE_DEVICES", ""}}, dir);
  ASSERT_TRUE(r.started) << "could not start " << testing_util::SimBinary();
  ASSERT_TRUE(r.exited) << "killed by signal " << r.signal << "; stderr: " << r.err;
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line expected: " << r.err;
  EXPECT_EQ(r.err.back(), '\n') << r.err;
  for (const std::string& s : c.says) EXPECT_NE(r.err.find(s), std::string::npos) << "missing '" << s << "' in " << r.err;
#if defined(DSPARK_HAVE_CUDA)
  EXPECT_NE(r.err.find("(cudaGetDeviceCount: "), std::string::npos) << r.err;
#else
  EXPECT_NE(r.err.find("(this build has no CUDA"), std::string::npos) << r.err;
#endif
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(fs::exists(out)) << "nothing may be written without a device: " << out;
}

INSTANTIATE_TEST_SUITE_P(Commands, NoDeviceCli, ::testing::ValuesIn(NoGpuCases()),
                         [](const ::testing::TestParamInfo<NoGpuCase>& info) { return info.param.name; });

// ---------------------------------------------------------------- aborted runs keep their steps

// An executor that fails the step whose index is `fail_at` with a status standing in for a GPU
// error; registered for every run but active only for runs whose --out is a folder of this test.
constexpr char kAbortMarker[] = "gpu_faults_cli_abort_";

class FailAtStep final : public StepExecutor {
 public:
  explicit FailAtStep(int64_t fail_at) : fail_at_(fail_at) {}
  absl::string_view name() const override { return "test_fail_at_step"; }
  absl::Status Execute(const StepPlan& plan, const StepArrays& /*arrays*/) override {
    if (plan.index == fail_at_)
      return absl::InternalError(absl::StrCat("step ", plan.index, ": test failure standing in for a CUDA error"));
    ++seen_;
    return absl::OkStatus();
  }
  absl::Status Finish(nlohmann::json* section) override {
    (*section)["steps_seen"] = seen_;
    return absl::OkStatus();
  }

 private:
  int64_t fail_at_;
  int64_t seen_ = 0;
};

const RegisterExecutor kRegisterFailAtStep(
    "test-fail-at-step", 100, [](const ExecutorRequest& r) -> absl::StatusOr<std::unique_ptr<StepExecutor>> {
      const std::string name = fs::path(r.out_dir).filename().string();
      if (name.rfind(kAbortMarker, 0) != 0) return std::unique_ptr<StepExecutor>();
      return std::unique_ptr<StepExecutor>(std::make_unique<FailAtStep>(std::stoll(name.substr(strlen(kAbortMarker)))));
    });

TEST(AbortedRun, KeepsTheCompletedStepsMarkedAborted) {
  for (int64_t fail_at : {0, 1, 7}) {
    SCOPED_TRACE(absl::StrCat("fail at step ", fail_at));
    const std::string out = Dir("abort") + "/" + kAbortMarker + std::to_string(fail_at);
    RunConfig c;
    c.workload = "batch1-512";
    c.num_requests = 2;
    c.impls = {Impl::kFused};
    c.check = false;
    c.out_dir = out;
    const absl::StatusOr<RunResult> r = ExecuteRun(c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
    const std::string msg(r.status().message());
    EXPECT_EQ(msg.rfind(absl::StrCat("step ", fail_at, ": test failure"), 0), 0u) << msg;
    EXPECT_NE(msg.find(absl::StrCat("[run aborted: the ", fail_at, " completed steps' results are in ", out)),
              std::string::npos)
        << msg;

    const nlohmann::json s = nlohmann::json::parse(SlurpFile(fs::path(out) / "summary.json"));
    EXPECT_EQ(s["status"], "aborted");
    EXPECT_EQ(s["steps_completed"], fail_at);
    EXPECT_EQ(s["scheduler"]["steps"], fail_at);
    EXPECT_EQ(s["metrics"]["steps"]["total"], fail_at) << "the failed step must not reach the metrics";
    EXPECT_EQ(s["test_fail_at_step"]["steps_seen"], fail_at);
    EXPECT_EQ(s["error"].get<std::string>().rfind(absl::StrCat("step ", fail_at, ": test failure"), 0), 0u);
    EXPECT_LT(s["completed"].get<int64_t>(), 2);

    const std::string steps = SlurpFile(fs::path(out) / "steps.csv");
    EXPECT_EQ(std::count(steps.begin(), steps.end(), '\n'), 1 + fail_at) << steps;
    const std::string requests = SlurpFile(fs::path(out) / "requests.csv");
    EXPECT_EQ(std::count(requests.begin(), requests.end(), '\n'), 1 + 2) << "every request has a row";
    EXPECT_TRUE(fs::exists(fs::path(out) / "perf.json"));
  }
}

TEST(AbortedRun, ACompleteRunSaysOk) {
  const std::string out = Dir("complete") + "/run";
  RunConfig c;
  c.workload = "batch1-512";
  c.num_requests = 1;
  c.impls = {Impl::kFused};
  c.check = false;
  c.out_dir = out;
  const absl::StatusOr<RunResult> r = ExecuteRun(c);
  ASSERT_TRUE(r.ok()) << r.status();
  const nlohmann::json s = nlohmann::json::parse(SlurpFile(fs::path(out) / "summary.json"));
  EXPECT_EQ(s["status"], "ok");
  EXPECT_FALSE(s.contains("steps_completed"));
  EXPECT_FALSE(s.contains("error"));
}

}  // namespace
}  // namespace dspark::sim
