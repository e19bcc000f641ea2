// Results of different inputs never mix: two traces of one sweep that share a file name get
// workload labels (and so rows, point ids and plot groups) of their own, a trace named like a
// preset does not join the preset's rows, and the same trace listed twice is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "sim/studies/sweep.h"
#include "tests/common/sweep_test_util.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ::dspark::testing_util::WriteTextFile;

SweepConfig TraceSweep(const fs::path& dir, std::vector<std::string> traces, std::vector<std::string> presets = {}) {
  SweepConfig c = ::dspark::testing_util::TinySweep((dir / "out").string());
  c.workloads = std::move(presets);
  c.traces = std::move(traces);
  c.concurrency = {1};
  c.batch_sizes = {2};
  c.modes = {SpecMode::kNone};
  c.impls = {Impl::kFused};
  return c;
}

// workload label -> trace of every planned point.
std::map<std::string, std::set<std::string>> Labels(const std::vector<SweepPoint>& plan) {
  std::map<std::string, std::set<std::string>> labels;
  for (const SweepPoint& p : plan) labels[p.workload_label].insert(p.trace.empty() ? p.workload : p.trace);
  return labels;
}

TEST(ResultsApart, TwoTracesOfOneFileNameGetTheirOwnLabels) {
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("results_apart", "same_name", true);
  const std::string row = "{\"prompt_len\": 10, \"output_len\": 4}\n";
  WriteTextFile(dir / "a" / "t.jsonl", row);
  WriteTextFile(dir / "b" / "t.jsonl", row);
  WriteTextFile(dir / "x" / "a" / "t.jsonl", row);
  WriteTextFile(dir / "other.jsonl", row);
  const std::string a = (dir / "a" / "t.jsonl").string(), b = (dir / "b" / "t.jsonl").string(),
                    xa = (dir / "x" / "a" / "t.jsonl").string(), other = (dir / "other.jsonl").string();
  auto plan = PlanSweep(TraceSweep(dir, {a, b, other}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Labels(*plan), (std::map<std::string, std::set<std::string>>{{"a_t", {a}}, {"b_t", {b}}, {"other", {other}}}));
  std::set<std::string> ids;
  for (const SweepPoint& p : *plan) EXPECT_TRUE(ids.insert(p.id).second) << p.id;

  // Two folders deep when one is not enough.
  auto deeper = PlanSweep(TraceSweep(dir, {a, xa}));
  ASSERT_TRUE(deeper.ok()) << deeper.status();
  const auto deep_labels = Labels(*deeper);
  ASSERT_EQ(deep_labels.size(), 2u);
  EXPECT_EQ(deep_labels.count("x_a_t"), 1u);

  // A trace that shares no name keeps its stem (and so its point ids).
  auto alone = PlanSweep(TraceSweep(dir, {a}));
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(Labels(*alone).begin()->first, "t");
}

TEST(ResultsApart, ATraceNamedLikeAPresetDoesNotJoinItsRows) {
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("results_apart", "preset_name", true);
  WriteTextFile(dir / "chat.jsonl", "{\"prompt_len\": 10, \"output_len\": 4}\n");
  auto plan = PlanSweep(TraceSweep(dir, {(dir / "chat.jsonl").string()}, {"chat"}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto labels = Labels(*plan);
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels.at("chat"), std::set<std::string>{"chat"});
}

TEST(ResultsApart, TheSameTraceListedTwiceIsRefused) {
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("results_apart", "twice", true);
  WriteTextFile(dir / "t.jsonl", "{\"prompt_len\": 10, \"output_len\": 4}\n");
  fs::create_symlink(dir / "t.jsonl", dir / "link.jsonl");
  for (const std::string& second : {(dir / "." / "t.jsonl").string(), (dir / "link.jsonl").string()}) {
    auto plan = PlanSweep(TraceSweep(dir, {(dir / "t.jsonl").string(), second}));
    ASSERT_FALSE(plan.ok()) << second;
    EXPECT_NE(std::string(plan.status().message()).find("are the same file; list each trace once"), std::string::npos)
        << plan.status();
  }
}

}  // namespace
}  // namespace dspark::sim
