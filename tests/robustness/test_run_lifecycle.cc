// A run's output folder over its life: one process at a time (the lock on --out, for run, sweep
// and merge alike); summary.json says "running" from the first step until the run replaces it;
// steps.csv and requests.csv grow as the run goes; SIGINT or SIGTERM ends the step in progress
// and leaves every file, the summary marked "interrupted" and covering exactly the steps done.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "sim/engine/stop_signal.h"
#include "sim/exec/executor_registry.h"
#include "sim/observe/metrics.h"
#include "sim/results/out_folder.h"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "tests/common/result_file_checks.h"
#include "tests/common/spawn_util.h"
#include "tests/common/sweep_test_util.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ::dspark::testing_util::ParseCsvTable;
using ::dspark::testing_util::SlurpFile;
using Clock = std::chrono::steady_clock;

std::string TempDir(const std::string& name) {
  return ::dspark::testing_util::ProcessTempDir("run_lifecycle", name, /*create=*/true);
}

int64_t CsvRows(const fs::path& path) {
  auto table = ParseCsvTable(SlurpFile(path));
  EXPECT_TRUE(table.ok()) << path << ": " << table.status();
  return table.ok() ? static_cast<int64_t>(table->size()) - 1 : -1;
}

nlohmann::json Summary(const fs::path& out) {
  const std::string text = SlurpFile(out / "summary.json");
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// ---- In process: a test executor asks the run to stop at a chosen step, as a signal would.

constexpr char kStopMarker[] = "run_lifecycle_stop_at_";

class StopAtStep final : public StepExecutor {
 public:
  StopAtStep(int64_t stop_at, fs::path out) : stop_at_(stop_at), out_(std::move(out)) {}
  absl::string_view name() const override { return "test_stop_at_step"; }
  absl::Status Execute(const StepPlan& plan, const StepArrays& /*arrays*/) override {
    if (plan.index != stop_at_) return absl::OkStatus();
    status_while_running_ = Summary(out_).value("status", std::string());
    StopSignal().store(SIGINT);
    return absl::OkStatus();
  }
  absl::Status Finish(nlohmann::json* section) override {
    (*section)["status_while_running"] = status_while_running_;
    return absl::OkStatus();
  }

 private:
  int64_t stop_at_;
  fs::path out_;
  std::string status_while_running_;
};

const RegisterExecutor kRegisterStopAtStep(
    "test-stop-at-step", 100, [](const ExecutorRequest& r) -> absl::StatusOr<std::unique_ptr<StepExecutor>> {
      const std::string name = fs::path(r.out_dir).filename().string();
      if (name.rfind(kStopMarker, 0) != 0) return std::unique_ptr<StepExecutor>();
      return std::unique_ptr<StepExecutor>(
          std::make_unique<StopAtStep>(std::stoll(name.substr(strlen(kStopMarker))), r.out_dir));
    });

TEST(RunInterrupted, TheStepInProgressEndsAndTheSummaryCoversTheStepsDone) {
  for (int64_t stop_at : {0, 5, 40}) {
    SCOPED_TRACE(absl::StrCat("stop at step ", stop_at));
    const fs::path out = fs::path(TempDir(absl::StrCat("inproc_", stop_at))) / absl::StrCat(kStopMarker, stop_at);
    // An earlier complete run in the same folder: none of its files may survive as this run's.
    RunConfig c;
    c.workload = "chat";
    c.num_requests = 24;
    c.impls = {Impl::kFused};
    c.out_dir = fs::path(out).replace_filename("earlier").string();
    ASSERT_TRUE(ExecuteRun(c).ok());
    fs::rename(c.out_dir, out);
    ASSERT_EQ(Summary(out)["status"], "ok");

    c.out_dir = out.string();
    StopSignal().store(0);
    const absl::StatusOr<RunResult> r = ExecuteRun(c);
    StopSignal().store(0);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(absl::IsCancelled(r.status())) << r.status();
    const std::string msg(r.status().message());
    EXPECT_NE(msg.find(absl::StrCat("stopped by SIGINT after ", stop_at + 1, " steps")), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"status\": \"interrupted\""), std::string::npos) << msg;

    const nlohmann::json s = Summary(out);
    ASSERT_FALSE(s.is_discarded());
    EXPECT_EQ(s["test_stop_at_step"]["status_while_running"], "running");
    EXPECT_EQ(s["status"], "interrupted");
    EXPECT_EQ(s["steps_completed"], stop_at + 1);
    EXPECT_EQ(s["scheduler"]["steps"], stop_at + 1);
    EXPECT_EQ(s["metrics"]["steps"]["total"], stop_at + 1);
    EXPECT_LT(s["completed"].get<int64_t>(), 24);
    EXPECT_EQ(CsvRows(out / "steps.csv"), stop_at + 1);
    EXPECT_EQ(CsvRows(out / "requests.csv"), 24) << "every request has a row, finished or not";
    EXPECT_TRUE(fs::exists(out / "perf.json"));
  }
}

// The rows streamed during the run are the bytes the whole run writes at its end.
TEST(RunFiles, StreamedFilesEqualTheMetricsCsvOfTheWholeRun) {
  for (int64_t stride : {1, 7}) {
    const fs::path out = fs::path(TempDir(absl::StrCat("stream_", stride))) / "run";
    RunConfig c;
    c.workload = "chat";
    c.num_requests = 30;
    c.concurrency = 4;
    c.impls = {Impl::kFused};
    c.check = false;
    c.steps_csv_stride = stride;
    c.out_dir = out.string();
    const absl::StatusOr<RunResult> r = ExecuteRun(c);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(Summary(out)["status"], "ok");
    const int64_t rows = CsvRows(out / "steps.csv");
    EXPECT_EQ(rows, (r->steps + stride - 1) / stride) << "stride " << stride;
    EXPECT_EQ(CsvRows(out / "requests.csv"), 30);
  }
}

// ---- Child processes: SIGINT and SIGTERM, and the lock.

bool WaitExit(pid_t pid, std::chrono::seconds timeout, int* status) {
  const auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    if (::waitpid(pid, status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, status, 0);
  return false;
}

// A run long enough to be stopped half way on any machine (check on, every implementation).
std::vector<std::string> LongRun(const fs::path& out) {
  return {"run", "--workload", "chat", "--num-requests", "4000", "--request-rate", "20", "--max-num-seqs", "64",
          "--progress", "none", "--out", out.string()};
}

TEST(RunInterrupted, BySignalLeavesTheFilesAndExitsWithTheSignalsCode) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  for (int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(StopSignalName(sig));
    const fs::path dir = TempDir(absl::StrCat("signal_", sig));
    const fs::path out = dir / "out";
    const pid_t pid = ::dspark::testing_util::StartSim(LongRun(out), {}, (dir / "log.txt").string());
    ASSERT_GT(pid, 0);
    // Some progress first: steps.csv has rows (it is flushed about every second).
    int status = 0;
    bool exited = false;
    const auto end = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < end) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      std::error_code ec;
      if (fs::file_size(out / "steps.csv", ec) > std::strlen(MetricsObserver::StepsCsvHeader()) && !ec) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_FALSE(exited) << "the run ended before it could be interrupted: " << SlurpFile(dir / "log.txt");
    EXPECT_EQ(Summary(out)["status"], "running");
    ::kill(pid, sig);
    ASSERT_TRUE(WaitExit(pid, std::chrono::seconds(60), &status)) << "did not stop";
    ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << SlurpFile(dir / "log.txt");
    EXPECT_NE(SlurpFile(dir / "log.txt").find(absl::StrCat("stopped by ", StopSignalName(sig))), std::string::npos)
        << SlurpFile(dir / "log.txt");
    const nlohmann::json s = Summary(out);
    ASSERT_FALSE(s.is_discarded());
    EXPECT_EQ(s["status"], "interrupted");
    const int64_t steps = s["steps_completed"].get<int64_t>();
    EXPECT_GT(steps, 0);
    EXPECT_EQ(s["scheduler"]["steps"], steps);
    EXPECT_EQ(CsvRows(out / "steps.csv"), steps) << "steps.csv covers exactly the steps done";
    EXPECT_EQ(CsvRows(out / "requests.csv"), 4000);
    EXPECT_LT(s["completed"].get<int64_t>(), 4000) << "stopped before the end";
    EXPECT_TRUE(fs::exists(out / "perf.json"));
  }
}

TEST(OutLock, ASecondProcessOnTheSameOutFailsAtOnce) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  const fs::path dir = TempDir("lock_two_runs");
  const fs::path out = dir / "out";
  const pid_t first = ::dspark::testing_util::StartSim(LongRun(out), {}, (dir / "first.txt").string());
  ASSERT_GT(first, 0);
  // Until the first run holds the lock.
  int status = 0;
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < end && OutFolderLock::CheckNotHeld(out, "--out").ok()) {
    ASSERT_NE(::waitpid(first, &status, WNOHANG), first) << SlurpFile(dir / "first.txt");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(OutFolderLock::CheckNotHeld(out, "--out").ok());
  const auto t0 = Clock::now();
  const auto second = ::dspark::testing_util::SpawnSim(LongRun(out), {}, dir.string());
  const double second_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_TRUE(second.started);
  EXPECT_TRUE(second.exited);
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_NE(second.err.find(absl::StrCat("--out '", out.string(), "' is in use by another dspark-sim (pid ", first,
                                         ", dspark-sim run")),
            std::string::npos)
      << second.err;
  EXPECT_LT(second_s, 10.0) << "it must fail at once, not after its own run";
  // The first run is untouched by the attempt, and ending it (however) releases the lock.
  EXPECT_EQ(Summary(out)["status"], "running");
  ::kill(first, SIGKILL);
  ::waitpid(first, &status, 0);
  EXPECT_TRUE(OutFolderLock::CheckNotHeld(out, "--out").ok());
  const auto third = ::dspark::testing_util::SpawnSim(
      {"run", "--workload", "batch1-512", "--num-requests", "2", "--no-check", "--out", out.string()}, {},
      dir.string());
  EXPECT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(Summary(out)["status"], "ok");
}

// run, sweep and sweep --merge each refuse an --out another process holds (here: this test
// process, through its own lock), and write nothing there.
TEST(OutLock, RunSweepAndMergeRefuseAFolderAnotherProcessHolds) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  const fs::path dir = TempDir("lock_held");
  const fs::path out = dir / "out";
  const fs::path shard = dir / "shard";
  auto made = RunSweep(::dspark::testing_util::TinySweep(shard.string()), nullptr);
  ASSERT_TRUE(made.ok()) << made.status();
  auto held = OutFolderLock::Acquire(out, "test");
  ASSERT_TRUE(held.ok()) << held.status();
  const std::vector<std::vector<std::string>> commands = {
      {"run", "--workload", "batch1-512", "--num-requests", "2", "--no-check", "--out", out.string()},
      {"sweep", "--workload", "batch1-512", "--concurrency", "1", "--batch-size", "2", "--num-requests", "2",
       "--mode", "none", "--time-impl", "fused", "--no-check", "--out", out.string()},
      {"sweep", "--merge", shard.string(), "--out", out.string()}};
  for (const auto& args : commands) {
    const auto r = ::dspark::testing_util::SpawnSim(args, {}, dir.string());
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("is in use by another dspark-sim (pid "), std::string::npos) << r.err;
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
    EXPECT_EQ(names, std::vector<std::string>{kOutLockName}) << args[0];
  }
  // A merge also refuses an input that is still being written.
  {
    auto shard_lock = OutFolderLock::Acquire(shard, "test");
    ASSERT_TRUE(shard_lock.ok());
    auto merged = MergeSweeps({shard.string()}, (dir / "merged").string(), {"sweep", "--merge"});
    ASSERT_FALSE(merged.ok());
    EXPECT_NE(std::string(merged.status().message()).find("--merge input '" + shard.string() + "' is in use"),
              std::string::npos)
        << merged.status();
  }
  held = absl::FailedPreconditionError("released");  // drops the lock
  const auto r = ::dspark::testing_util::SpawnSim(commands[0], {}, dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace dspark::sim
