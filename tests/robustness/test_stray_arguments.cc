// A word on the command line that is neither an option nor an option's value is refused by every
// command (exit 2, naming the word), never dropped: `dspark-sim run trace.csv` must not run the
// default workload while the user believes it replayed the trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "tests/common/parse_args.h"
#include "tests/common/spawn_util.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;

// args[0] is the command's name.
absl::Status ParseRun(std::vector<std::string> args) { return test::ParseArgv(ParseRunArgs, std::move(args)).status(); }
absl::Status ParseSweep(std::vector<std::string> args) {
  return test::ParseArgv(ParseSweepArgs, std::move(args)).status();
}

TEST(StrayArguments, RunAndSweepNameTheWord) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "trace.csv"}, {"run", "--workload", "chat", "extra"}, {"run", "--no-check", "yes"}}) {
    const absl::Status s = ParseRun(args);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << args.back() << ": " << s;
    EXPECT_NE(std::string(s.message()).find("unexpected argument '" + args.back() + "' (dspark-sim run takes options only"),
              std::string::npos)
        << s;
  }
  const absl::Status first = ParseSweep({"sweep", "stray", "--workload", "chat"});
  EXPECT_NE(std::string(first.message()).find("unexpected argument 'stray' (dspark-sim sweep"), std::string::npos)
      << first;
  const absl::Status after_known = ParseSweep({"sweep", "--workload", "chat", "--resume", "stray"});
  EXPECT_NE(std::string(after_known.message()).find("unexpected argument 'stray'"), std::string::npos) << after_known;
  // The value of a pass-through option is not stray; run checks the pass-through words itself.
  EXPECT_TRUE(ParseSweep({"sweep", "--spec-k", "4", "--out", "x"}).ok());
  auto config = [] {
    std::vector<std::string> args = {"sweep", "--no-check", "stray", "--num-requests", "2", "--concurrency", "1",
                                     "--time-impl", "fused", "--mode", "none"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    std::string help;
    return ParseSweepArgs(static_cast<int>(argv.size()), argv.data(), &help);
  }();
  ASSERT_TRUE(config.ok()) << config.status();
  auto plan = PlanSweep(*config);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(std::string(plan.status().message()).find("unexpected argument 'stray'"), std::string::npos)
      << plan.status();
}

TEST(StrayArguments, EveryCommandExitsTwoAndWritesNothing) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  const std::string dir = ::dspark::testing_util::ProcessTempDir("stray", "cli", /*create=*/true);
  for (const char* command : {"run", "sweep", "step", "verify", "soak", "bench", "calibrate", "microbench"}) {
    const auto r = ::dspark::testing_util::SpawnSim({command, "stray"}, {}, dir);
    ASSERT_TRUE(r.started);
    EXPECT_TRUE(r.exited) << command;
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("dspark-sim ") + command + ": unexpected argument 'stray' (dspark-sim " + command +
                         " takes options only"),
              std::string::npos)
        << command << ": " << r.err;
  }
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"child.stderr", "child.stdout"}));
}

// A float option turned into an integer is checked before the cast: NaN, inf and values beyond the
// integer's range are refused with the option's name (the cast itself would be undefined).
TEST(FloatToInteger, SoakRssLimitRefusesNanInfAndOutOfRange) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  const std::string dir = ::dspark::testing_util::ProcessTempDir("stray", "float_cast", /*create=*/true);
  for (const char* value : {"nan", "inf", "-inf", "1e300", "-1"}) {
    const auto r = ::dspark::testing_util::SpawnSim({"soak", std::string("--rss-limit-mib=") + value}, {}, dir);
    EXPECT_EQ(r.exit_code, 2) << value << ": " << r.err;
    EXPECT_NE(r.err.find("--rss-limit-mib: expected a number of MiB in [0, 2^40], got "), std::string::npos)
        << value << ": " << r.err;
  }
}

}  // namespace
}  // namespace dspark::sim
