// Numbers that are finite in the input but not in the result: a calibration whose costs pass
// the per-key bounds yet carry the simulated clock to inf or past 2^33 s (a huge roofline floor,
// a tiny bandwidth) stops the run with the step and its costs; the result is never "ok". And
// where a JSON input's value is, for its error messages (JsonLines).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sim/studies/run.h"
#include "sim/workload/trace.h"
#include "sim/workload/json_keys.h"
#include "tests/common/cli_run.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ::dspark::testing_util::ProcessTempDir;
using ::dspark::testing_util::SlurpFile;
using ::dspark::testing_util::WriteTextFile;

struct Outcome {
  int code = 0;
  std::string err;
  nlohmann::json summary;
};

Outcome RunWithCalibration(const std::string& name, const std::string& calibration) {
  const fs::path dir = ProcessTempDir("numbers", name, /*create=*/true);
  WriteTextFile(dir / "calibration.json", calibration);
  const fs::path out = dir / "out";
  Outcome o;
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  o.code = test::RunCli({"run", "--workload", "chat", "--num-requests", "3", "--no-check", "--progress", "none",
                         "--calibration", (dir / "calibration.json").string(), "--out", out.string()});
  ::testing::internal::GetCapturedStdout();
  o.err = ::testing::internal::GetCapturedStderr();
  const std::string text = SlurpFile(out / "summary.json");
  if (!text.empty()) o.summary = nlohmann::json::parse(text);
  return o;
}

TEST(Numbers, AHugeButAllowedCostStopsTheRunInsteadOfReportingInfiniteTimes) {
  // 1e15 us per forward: each value is a finite JSON number, the clock passes 2^33 s in a few steps.
  const Outcome o = RunWithCalibration("huge_floor", "{\"forward\": {\"target_roofline\": {\"floor_us\": 1e15}}}\n");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("the time model puts its end at"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("expected a finite time below 2^33 s = 8589934592 s"), std::string::npos) << o.err;
  ASSERT_TRUE(o.summary.is_object());
  EXPECT_EQ(o.summary["status"], "aborted");
  EXPECT_NE(o.summary["status"], "ok");
}

TEST(Numbers, ATinyDivisorStopsTheRunAtItsFirstStep) {
  // A bandwidth of 1e-300 TB/s makes every forward inf.
  const Outcome o = RunWithCalibration("tiny_bandwidth",
                                       "{\"forward\": {\"target_roofline\": {\"hbm_tb_per_s\": 1e-300}}}\n");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("step 0 ("), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("is too large or not a number"), std::string::npos) << o.err;
  ASSERT_TRUE(o.summary.is_object());
  EXPECT_EQ(o.summary["status"], "aborted");
}

TEST(Numbers, ALongSimulatedTimeCostsNoMemoryPerSecond) {
  // 1e11 us = 1e5 s per forward: the per-second series of
  // vLLM's max_output_tokens_per_s / max_concurrent_requests were arrays of one entry per
  // simulated second; they now follow the steps.
  const Outcome o = RunWithCalibration("long_time", "{\"forward\": {\"target_roofline\": {\"floor_us\": 1e11}}}\n");
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_TRUE(o.summary.is_object());
  EXPECT_EQ(o.summary["status"], "ok");
  EXPECT_GE(o.summary["max_output_tokens_per_s"].get<double>(), 1.0);
  EXPECT_GE(o.summary["max_concurrent_requests"].get<int64_t>(), 1);
  EXPECT_GT(o.summary["duration"].get<double>(), 1e5);
}

TEST(Numbers, MinusZeroTimeScaleIsZero) {
  std::vector<std::string> args = {"run", "--trace", "t.csv", "--time-scale", "-0"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::string help;
  const absl::StatusOr<RunConfig> c = ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->time_scale, 0.0);
  EXPECT_FALSE(std::signbit(c->time_scale));
}

TEST(TraceMemory, MaxRequestsStopsTheReadAfterTheRequestsItNeeds) {
  // Row 3 arrives with row 2 (read: equal times go by id), row 5 is malformed and never read.
  const std::string text =
      "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,10,2\n1.0,20,3\n1.0,30,4\n2.0,40,5\n3.0,zz,1\n";
  TraceOptions options;
  options.max_requests = 2;
  const absl::StatusOr<Trace> t = ParseTrace(text, "t.csv", options);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(t->read_whole_file);
  ASSERT_EQ(t->requests.size(), 3u);
  EXPECT_EQ(t->requests[2].prompt_len, 30);
  EXPECT_EQ(t->data_rows, 4);
  options.max_requests = 0;
  EXPECT_FALSE(ParseTrace(text, "t.csv", options).ok()) << "the whole file reaches the bad row";
  // A scan that keeps no request measures them.
  options.keep_requests = false;
  const std::string good = text.substr(0, text.rfind("3.0,"));
  const absl::StatusOr<Trace> scan = ParseTrace(good, "t.csv", options);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_TRUE(scan->requests.empty());
  EXPECT_EQ(scan->accepted_requests, 4);
  EXPECT_EQ(scan->longest_request, 45);
}

TEST(JsonLines, EveryValueIsAtItsKeysOrElementsLine) {
  const std::string text =
      "{\"a\": 1,\n"
      " \"b\": {\"c\": [10,\n"
      "   20\n"
      "  ], \"vllm-0.31\": {\"d\": true}},\n"
      " \"e\": [{\"f\": null}, [3]]\n"
      "}\n";
  const JsonLines lines = JsonLines::Of(text);
  EXPECT_EQ(lines.LineOf("a"), 1);
  EXPECT_EQ(lines.LineOf("b"), 2);
  EXPECT_EQ(lines.LineOf("b.c"), 2);
  EXPECT_EQ(lines.LineOf("b.c[0]"), 2);
  EXPECT_EQ(lines.LineOf("b.c[1]"), 3);  // a number ended by a newline stays on its line
  EXPECT_EQ(lines.LineOf("b.vllm-0.31.d"), 4);
  EXPECT_EQ(lines.LineOf("e[0].f"), 5);
  EXPECT_EQ(lines.LineOf("e[1][0]"), 5);
  EXPECT_EQ(lines.LineOf("nope"), 0);
  EXPECT_EQ(lines.Where("x.json", "b.c[1]"), "x.json:3");
  EXPECT_EQ(lines.Where("x.json", "nope"), "x.json");
  EXPECT_EQ(JsonLines::Of("{\"a\": ").LineOf("a"), 0);  // not JSON: no lines
}

}  // namespace
}  // namespace dspark::sim
