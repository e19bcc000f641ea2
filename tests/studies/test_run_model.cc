// The model layout in `run` and `sweep` (--model): DeepSeek-V4 runs its releases' states on
// 256-token KV blocks, a pairing no release shipped is refused by name, and a state whose release
// never shipped adaptive verification is labelled a what-if in an adaptive run.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "tests/common/parse_args.h"
#include "tests/common/temp_folders.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;

using test::ParseRun;
using test::ParseSweep;

absl::Status ParseAndValidate(std::vector<std::string> args) { return test::ParseValidRun(std::move(args)).status(); }

TEST(RunModel, V4TakesItsBlocksItsStatesAndItsNewestReleaseToTime) {
  auto v41 = ParseRun({"--workload", "chat"});
  ASSERT_TRUE(v41.ok()) << v41.status();
  EXPECT_EQ(v41->model, ModelKind::kV41);
  EXPECT_EQ(v41->scheduler.block_size, 64);
  EXPECT_EQ(v41->time_impl, Impl::kFused);
  EXPECT_FALSE(v41->ToJson().contains("model")) << "a V4.1 run's config (a sweep point's id) is unchanged";

  auto v4 = ParseRun({"--workload", "chat", "--model", "v4"});
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->model, ModelKind::kV4);
  EXPECT_EQ(v4->scheduler.block_size, ModelConstsFor(ModelKind::kV4).mla_block_size);
  EXPECT_EQ(v4->impls, ImplsOfModel(ModelKind::kV4));
  EXPECT_EQ(v4->time_impl, ImplsOfModel(ModelKind::kV4).back());
  EXPECT_EQ(std::string(ImplKey(v4->time_impl)), "vllm-0.29");
  EXPECT_EQ(v4->ToJson()["model"], "v4");
  EXPECT_TRUE(v4->Validate().ok()) << v4->Validate();
}

TEST(RunModel, APairingNoReleaseShippedIsRefusedByName) {
  auto checked = ParseRun({"--workload", "chat", "--model", "v4", "--impl", "vllm-0.31"});
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(std::string(checked.status().message()).find("--impl: "), std::string::npos) << checked.status();
  EXPECT_NE(std::string(checked.status().message()).find("DeepSeek-V4.1"), std::string::npos) << checked.status();

  const absl::Status timed = ParseAndValidate({"--workload", "chat", "--model", "v4", "--time-impl", "fused-suite"});
  ASSERT_FALSE(timed.ok());
  EXPECT_EQ(std::string(timed.message()),
            "--time-impl: fused-suite builds DeepSeek-V4.1, not DeepSeek-V4 (--model)");

  const absl::Status v41_timed_by_v4 = ParseAndValidate({"--workload", "chat", "--time-impl", "vllm-0.24"});
  ASSERT_FALSE(v41_timed_by_v4.ok());
  EXPECT_NE(std::string(v41_timed_by_v4.message()).find("vllm-0.24 builds DeepSeek-V4, not DeepSeek-V4.1"),
            std::string::npos)
      << v41_timed_by_v4;

  auto unknown = ParseRun({"--workload", "chat", "--model", "v5"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(std::string(unknown.status().message()).find("--model: "), std::string::npos) << unknown.status();
}

// A checked V4 run: every V4 state equals the reference on every step but for the kinds the
// states are known to have (no bug), and an adaptive run names the states whose releases never
// shipped adaptive verification; a DSpark run without it names none.
TEST(RunModel, AV4RunIsCheckedAndItsWhatIfsAreNamed) {
  for (const char* mode : {"adaptive", "dspark"}) {
    const fs::path out = testing_util::ProcessTempDir("run_model", std::string("v4_") + mode, true);
    auto config = ParseRun({"--workload", "chat", "--model", "v4", "--mode", mode, "--num-requests", "12",
                            "--max-num-seqs", "8", "--max-num-batched-tokens", "2048", "--progress", "none",
                            "--out", out.string()});
    ASSERT_TRUE(config.ok()) << config.status();
    auto r = ExecuteRun(*config);
    ASSERT_TRUE(r.ok()) << r.status();
    const CheckTally* tally = r->check();
    ASSERT_NE(tally, nullptr);
    ASSERT_EQ(tally->impls.size(), ImplsOfModel(ModelKind::kV4).size());
    for (const auto& [impl, t] : tally->impls) {
      EXPECT_EQ(t.steps, r->steps) << ImplKey(impl);
      EXPECT_EQ(t.steps_with[2], 0) << ImplKey(impl) << ": bug steps in a " << mode << " run";
    }
    std::vector<std::string> what_ifs;
    for (const auto& [name, text] : r->adaptive_what_ifs) what_ifs.push_back(name);
    if (std::string(mode) == "adaptive")
      EXPECT_EQ(what_ifs, (std::vector<std::string>{"vllm-0.24", "vllm-0.27"}));
    else
      EXPECT_TRUE(what_ifs.empty());
    const std::string summary = testing_util::SlurpFile(out / "summary.json");
    EXPECT_NE(summary.find("\"block_size\": 256"), std::string::npos);
    EXPECT_EQ(summary.find("what_if_adaptive_verification") != std::string::npos, std::string(mode) == "adaptive");
  }
}

TEST(SweepModel, TheAxesFollowTheModelAndEveryPointRunsIt) {
  const fs::path out = testing_util::ProcessTempDir("run_model", "sweep_v4", true);
  auto c = ParseSweep({"--model", "v4", "--workload", "chat", "--concurrency", "1", "--mode", "dspark",
                       "--impl", "all", "--out", out.string()});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->impls, ImplsOfModel(ModelKind::kV4));
  auto points = PlanSweep(*c);
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_EQ(points->size(), ImplsOfModel(ModelKind::kV4).size());
  for (const SweepPoint& p : *points) {
    EXPECT_EQ(p.config.model, ModelKind::kV4) << p.id;
    EXPECT_EQ(p.config.impls, ImplsOfModel(ModelKind::kV4)) << p.id;
    EXPECT_NE(std::find(p.run_argv.begin(), p.run_argv.end(), "v4"), p.run_argv.end()) << p.id;
  }
  auto wrong = ParseSweep({"--model", "v4", "--time-impl", "fused-suite", "--out", out.string()});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(std::string(wrong.status().message()).find("--time-impl: "), std::string::npos) << wrong.status();
}

}  // namespace
}  // namespace dspark::sim
