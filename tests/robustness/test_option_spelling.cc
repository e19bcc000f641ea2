// One spelling, one meaning, in every command:
//  - options are never guessed from an abbreviation (--num-req is not --num-requests, --step-l
//    is not --step-log): an abbreviation is an unknown option with a "did you mean", so it can
//    neither change a run silently nor slip past sweep's list of refused pass-through options;
//  - --seed -1 (and any value outside [0, 2^64 - 1]) is refused by every command that has a
//    seed, as `run` refuses it, never wrapped to 2^64 - 1;
//  - no file a run writes is one of its inputs or another of its outputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sim/results/out_folder.h"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "tests/common/parse_args.h"
#include "tests/common/spawn_util.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ::dspark::testing_util::SlurpFile;
using ::dspark::testing_util::WriteTextFile;

absl::StatusOr<RunConfig> ParseRun(std::vector<std::string> args) { return test::ParseValidRun(std::move(args)); }

TEST(Abbreviations, RunRefusesThemAndNamesTheOption) {
  for (const auto& [typed, meant] : std::vector<std::pair<std::string, std::string>>{
           {"--num-req", "--num-requests"}, {"--step-l", "--step-log"}, {"--dump-w", "--dump-workload"},
           {"--max-num-se", "--max-num-seqs"}}) {
    const auto c = ParseRun({"--workload", "chat", typed, "4"});
    ASSERT_FALSE(c.ok()) << typed;
    EXPECT_EQ(std::string(c.status().message()),
              "unrecognised option '" + typed + "'; did you mean " + meant + "? (see dspark-sim run --help)");
  }
  // A whole name still works, and an abbreviation that fits several options suggests none.
  EXPECT_TRUE(ParseRun({"--workload", "chat", "--num-requests", "4"}).ok());
  const auto ambiguous = ParseRun({"--workload", "chat", "--max", "4"});
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(std::string(ambiguous.status().message()), "unrecognised option '--max' (see dspark-sim run --help)");
}

// The refused pass-through options of sweep (--step-log, --dump-workload, --max-num-seqs,
// --time-impl) were compared by whole name while `run` guessed: --step-l reached every point's
// run as --step-log and wrote outside --out.
TEST(Abbreviations, SweepPassesNoAbbreviationToItsPoints) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("option_spelling", "sweep_abbrev", true);
  for (const char* typed : {"--step-l", "--dump-work", "--time-im"}) {
    const fs::path outside = dir / (std::string(typed + 2) + ".out");
    const auto r = ::dspark::testing_util::SpawnSim(
        {"sweep", "--workload", "chat", "--batch-size", "8", "--concurrency", "1", "--mode", "none", "--time-impl",
         "fused", "--num-requests", "2", "--no-check", "--progress", "none", typed, outside.string(), "--out",
         (dir / "sweep").string()},
        {}, dir.string());
    ASSERT_TRUE(r.started);
    EXPECT_TRUE(r.exited) << typed;
    EXPECT_EQ(r.exit_code, 2) << typed << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("unrecognised option '") + typed + "'"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(outside)) << typed;
    EXPECT_FALSE(fs::exists(dir / "sweep" / "sweep.jsonl")) << typed;
  }
}

TEST(Abbreviations, EveryOtherCommandRefusesThem) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("option_spelling", "other_abbrev", true);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"step", "--cas", "decode_b4"}, {"verify", "--prog", "none"}, {"soak", "--ste", "10"}}) {
    const auto r = ::dspark::testing_util::SpawnSim(args, {}, dir.string());
    ASSERT_TRUE(r.started);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("unrecognised option '" + args[1] + "'; did you mean"), std::string::npos)
        << args[0] << ": " << r.err;
  }
}

TEST(Seed, EveryCommandRefusesANegativeOrTooLargeSeed) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("option_spelling", "seed", true);
  // bench, calibrate and microbench need a GPU build; they parse with the same function as step.
  for (const char* command : {"run", "sweep", "step", "verify", "soak"})
    for (const char* value : {"-1", "-0", "18446744073709551616", "1e3", " -2"}) {
      std::vector<std::string> args = {command, std::string("--seed=") + value};
      if (std::string(command) == "run" || std::string(command) == "sweep")
        args.insert(args.end(), {"--workload", "chat", "--out", (dir / "out").string()});
      const auto r = ::dspark::testing_util::SpawnSim(args, {}, dir.string());
      ASSERT_TRUE(r.started);
      EXPECT_EQ(r.exit_code, 2) << command << " " << value << ": " << r.err;
      EXPECT_NE(r.err.find(std::string("--seed: expected an integer in [0, 18446744073709551615], got '") + value +
                           "'"),
                std::string::npos)
          << command << " " << value << ": " << r.err;
      EXPECT_FALSE(fs::exists(dir / "out")) << command << " " << value;
    }
}

TEST(Seed, ASweepConfigFileSeedIsCheckedToo) {
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("option_spelling", "seed_config", true);
  WriteTextFile(dir / "sweep.cfg", "seed = -1\n");
  std::vector<std::string> args = {"sweep", "--config", (dir / "sweep.cfg").string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::string help;
  const auto c = ParseSweepArgs(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(std::string(c.status().message()),
            (dir / "sweep.cfg").string() + ": --seed: expected an integer in [0, 18446744073709551615], got '-1'");
}

// A switch in a --config file means the same in run and in sweep, for every boolean word:
// `check = false` turns the check off (a bool_switch set to false used to read as "not given",
// leaving the check on), and sweep passes `no-check = yes` as --no-check, not as a stray "yes".
TEST(ConfigSwitches, MeanTheSameInRunAndInSweep) {
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("option_spelling", "config_switches", true);
  struct Line {
    std::string text;
    bool check;
  };
  const std::vector<Line> lines = {{"check = false", false},    {"check = off", false},    {"check = 0", false},
                                   {"no-check = true", false},  {"no-check = yes", false}, {"no-check = 1", false},
                                   {"no-check = false", true},  {"check = true", true},    {"check = no\nno-check = on", false},
                                   {"cuda-graphs = true", true}};
  int k = 0;
  for (const Line& line : lines) {
    const fs::path cfg = dir / ("c" + std::to_string(k++) + ".cfg");
    WriteTextFile(cfg, "workload = chat\nnum-requests = 2\nconcurrency = 1\nmode = none\ntime-impl = fused\nimpl = fused\n" + line.text + "\n");
    const auto run = ParseRun({"--config", cfg.string()});
    ASSERT_TRUE(run.ok()) << line.text << ": " << run.status();
    EXPECT_EQ(run->check, line.check) << line.text;
    std::vector<std::string> args = {"sweep", "--config", cfg.string(), "--out", (dir / "out").string()};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    std::string help;
    const auto sweep = ParseSweepArgs(static_cast<int>(argv.size()), argv.data(), &help);
    ASSERT_TRUE(sweep.ok()) << line.text << ": " << sweep.status();
    const auto plan = PlanSweep(*sweep);
    ASSERT_TRUE(plan.ok()) << line.text << ": " << plan.status();
    ASSERT_EQ(plan->size(), 1u);
    EXPECT_EQ(plan->front().config.check, line.check) << line.text;
    // impl is the check list in both commands; time-impl is run's timing and sweep's axis.
    EXPECT_EQ(plan->front().config.time_impl, Impl::kFused) << line.text;
    EXPECT_EQ(plan->front().config.impls, std::vector<Impl>({Impl::kFused})) << line.text;
  }
  // Opposite meanings together are refused; a word that is not a boolean is named.
  WriteTextFile(dir / "both.cfg", "workload = chat\ncheck = false\nno-check = false\n");
  const auto both = ParseRun({"--config", (dir / "both.cfg").string()});
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(std::string(both.status().message()), "--check and --no-check contradict each other");
  WriteTextFile(dir / "maybe.cfg", "no-check = maybe\n");
  std::vector<std::string> args = {"sweep", "--config", (dir / "maybe.cfg").string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::string help;
  const auto maybe = ParseSweepArgs(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_FALSE(maybe.ok());
  EXPECT_EQ(std::string(maybe.status().message()),
            (dir / "maybe.cfg").string() + ": key 'no-check': expected true, false, yes, no, on, off, 1 or 0, got 'maybe'");
}

// An option that every point's run refuses leaves no result: the sweep exits 2 with the reason,
// not 0 with a file of skipped rows.
TEST(SweepOfNothing, EveryPointSkippedIsAnError) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("option_spelling", "all_skipped", true);
  const auto r = ::dspark::testing_util::SpawnSim(
      {"sweep", "--workload", "chat", "--concurrency", "1", "--mode", "none", "--time-impl", "fused", "--num-requests", "2",
       "--no-check", "--progress", "none", "--spec-k", "0", "--out", (dir / "sweep").string()},
      {}, dir.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("dspark-sim sweep: every point is an invalid combination, none ran: --spec-k: expected K in "
                       "[1, 8], got 0"),
            std::string::npos)
      << r.err;
}

TEST(OutputsApart, NoOutputIsAnInputOrAnotherOutput) {
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("option_spelling", "outputs_apart", true);
  const fs::path trace = dir / "trace.jsonl", calibration = dir / "cal.json", config = dir / "run.cfg";
  WriteTextFile(trace, "{\"prompt_len\": 10, \"output_len\": 4}\n");
  WriteTextFile(calibration, "{}\n");
  WriteTextFile(config, "no-check = true\n");
  fs::create_directories(dir / "sub");
  fs::create_symlink(trace, dir / "link.jsonl");
  fs::create_hard_link(trace, dir / "hard.jsonl");
  const std::string out = (dir / "out").string();
  const std::vector<std::string> base = {"--trace", trace.string(), "--calibration", calibration.string(),
                                         "--config", config.string(), "--out", out};
  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {{"--dump-workload", trace.string()}, "--dump-workload: '" + trace.string() + "' is the --trace input"},
      {{"--dump-workload", (dir / "sub" / ".." / "trace.jsonl").string()}, "is the --trace input"},
      {{"--dump-workload", (dir / "link.jsonl").string()}, "is the --trace input"},
      {{"--dump-workload", (dir / "hard.jsonl").string()}, "is the --trace input"},
      {{"--step-log", calibration.string()}, "--step-log: '" + calibration.string() + "' is the --calibration input"},
      {{"--step-log", config.string()}, "is the --config input"},
      {{"--step-log", out + "/summary.json"}, "is also --out's summary.json"},
      {{"--dump-workload", out + "/requests.csv"}, "is also --out's requests.csv"},
      {{"--step-log", (dir / "x").string(), "--dump-workload", (dir / "x").string()}, "is also --step-log"},
      {{"--save-result", "--result-dir", dir.string(), "--result-filename", "trace.jsonl"},
       "--save-result's file: '" + trace.string() + "' is the --trace input"},
      {{"--save-result", "--result-filename", "steps.csv"}, "is also --out's steps.csv"},
  };
  for (const Bad& b : bad) {
    std::vector<std::string> args = base;
    args.insert(args.end(), b.args.begin(), b.args.end());
    const auto c = ParseRun(args);
    ASSERT_FALSE(c.ok()) << b.args[0] << " " << b.args[1];
    EXPECT_TRUE(absl::IsInvalidArgument(c.status()));
    EXPECT_NE(std::string(c.status().message()).find(b.message), std::string::npos) << c.status();
    EXPECT_NE(std::string(c.status().message()).find("expected a file that is none of the run's inputs or other outputs"),
              std::string::npos)
        << c.status();
  }
  std::vector<std::string> fine = base;
  fine.insert(fine.end(), {"--dump-workload", (dir / "w.jsonl").string(), "--step-log", (dir / "s.log").string()});
  EXPECT_TRUE(ParseRun(fine).ok()) << ParseRun(fine).status();
  EXPECT_EQ(SlurpFile(trace), "{\"prompt_len\": 10, \"output_len\": 4}\n");
}

TEST(OutputsApart, TheCommandLeavesTheTraceAsItWas) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("option_spelling", "outputs_cli", true);
  const std::string text = "{\"prompt_len\": 10, \"output_len\": 4}\n{\"prompt_len\": 12, \"output_len\": 3}\n";
  WriteTextFile(dir / "t.jsonl", text);
  const auto r = ::dspark::testing_util::SpawnSim({"run", "--trace", (dir / "t.jsonl").string(), "--no-check",
                                                   "--dump-workload", (dir / "t.jsonl").string(), "--out",
                                                   (dir / "out").string()},
                                                  {}, dir.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is the --trace input"), std::string::npos) << r.err;
  EXPECT_EQ(SlurpFile(dir / "t.jsonl"), text);
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
}  // namespace dspark::sim
