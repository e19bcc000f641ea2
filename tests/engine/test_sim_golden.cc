// Golden step logs: every step's plan and arrays for small fixed-seed workloads, one file per
// mode in tests/golden/. A change to scheduling, padding, acceptance draws or the time model
// shows up as a diff. After an intended change, regenerate with
//   DSPARK_REGEN_GOLDEN=1 ./build/dspark_tests --gtest_filter='GoldenStepLog*'
// and review the diff of tests/golden/ before committing it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/model/acceptance.h"
#include "sim/engine/engine.h"
#include "sim/observe/step_log.h"
#include "sim/model/time_model.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

struct GoldenCase {
  SpecMode mode;
  int32_t num_kv_blocks;
  std::string file;
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.file; }

std::string RunAndLog(const GoldenCase& g) {
  SchedulerConfig c;
  c.mode = g.mode;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 256;
  c.num_kv_blocks = g.num_kv_blocks;
  c.bt_stride_pad = 2;
  const std::vector<RequestSpec> reqs = {
      {0, 0.000, 40, 12, {}}, {1, 0.000, 100, 5, {}}, {2, 0.002, 7, 20, {}},
      {3, 0.010, 150, 3, {}}, {4, 0.030, 64, 9, {0.9, 0.2}}};
  const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
  const TimeModel time_model(DefaultTimeModelParams());
  Engine engine(c, reqs, acceptance, time_model, EngineOptions{}, 42);
  StepLogObserver log;
  engine.AddObserver(&log);
  const absl::Status s = engine.Run();
  EXPECT_TRUE(s.ok()) << s;
  return log.text();
}

class GoldenStepLog : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenStepLog, MatchesTheCommittedLog) {
  const std::string path = (testing_util::TestDir() / "golden" / GetParam().file).string();
  const std::string got = RunAndLog(GetParam());
  ASSERT_FALSE(got.empty());
  const char* regen = std::getenv("DSPARK_REGEN_GOLDEN");
  if (regen != nullptr && std::string(regen) == "1") {
    std::ofstream(path, std::ios::binary) << got;
    GTEST_SKIP() << "regenerated " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << path << " is missing; run with DSPARK_REGEN_GOLDEN=1 to create it";
  std::stringstream want;
  want << in.rdbuf();
  if (want.str() == got) return;
  // Point at the first differing line rather than dumping two logs.
  std::istringstream a(want.str()), b(got);
  std::string la, lb;
  int line = 1;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
  FAIL() << path << " differs at line " << line << "\n  golden: " << la << "\n  now:    " << lb
         << "\n(if the change is intended: DSPARK_REGEN_GOLDEN=1, then review the diff)";
}

TEST(GoldenStepLog, SameSeedSameLog) {
  const GoldenCase g{SpecMode::kAdaptive, 0, ""};
  EXPECT_EQ(RunAndLog(g), RunAndLog(g));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, GoldenStepLog,
    ::testing::Values(GoldenCase{SpecMode::kNone, 0, "steps_none.txt"},
                      GoldenCase{SpecMode::kDSpark, 0, "steps_dspark.txt"},
                      GoldenCase{SpecMode::kAdaptive, 0, "steps_adaptive.txt"},
                      GoldenCase{SpecMode::kAdaptive, 6, "steps_adaptive_tight_kv.txt"}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) {
      std::string n = info.param.file.substr(0, info.param.file.size() - 4);
      return n;
    });

}  // namespace
}  // namespace dspark::sim
