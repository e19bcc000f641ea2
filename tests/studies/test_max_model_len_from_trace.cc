// Without --max-model-len, max_model_len follows the trace: a long-context trace is accepted as
// it is (its longest request raises the limit), a trace that fits the default keeps it (the same
// results as before), and a given --max-model-len is kept with its over-length error.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "sim/studies/run.h"
#include "tests/common/temp_folders.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

RunConfig LongContext(const std::string& name, bool given) {
  RunConfig c;
  c.trace_path = (testing_util::TraceDataDir() / "mooncake_style_long_context.jsonl").string();
  c.num_requests = 3;  // prompts of 3,811, 28,319 and 10,531 tokens
  c.impls = {Impl::kFused};
  c.check = false;
  c.max_model_len_given = given;
  c.progress = ProgressStyle::kNone;
  c.out_dir = testing_util::ProcessTempDir("max_model_len", name, /*create=*/true);
  return c;
}

// The longest input_length + output_length of a Mooncake JSONL file.
int64_t LongestRow(const std::string& path) {
  std::ifstream in(path);
  int64_t longest = 0;
  for (std::string line; std::getline(in, line);) {
    const auto field = [&](const std::string& key) {
      const size_t at = line.find("\"" + key + "\": ");
      return at == std::string::npos ? int64_t{0} : static_cast<int64_t>(std::stoll(line.substr(at + key.size() + 4)));
    };
    longest = std::max(longest, field("input_length") + field("output_length"));
  }
  return longest;
}

// Every row of the trace is held to max_model_len (a bad row otherwise), also those past
// --num-requests: the limit is the whole trace's longest request.
TEST(MaxModelLenFromTrace, ALongerTraceRaisesItToItsLongestRequest) {
  if (testing_util::TraceDataDir().empty()) GTEST_SKIP() << "no traces";
  const RunConfig c = LongContext("raised", /*given=*/false);
  ASSERT_TRUE(c.Validate().ok());
  const absl::StatusOr<RunResult> r = ExecuteRun(c);
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t longest = LongestRow(c.trace_path);
  ASSERT_GT(longest, 28319 + 165);
  EXPECT_EQ(r->max_model_len, longest);
  EXPECT_EQ(r->serving.completed, 3);
}

TEST(MaxModelLenFromTrace, AGivenLimitKeepsItsOverLengthError) {
  if (testing_util::TraceDataDir().empty()) GTEST_SKIP() << "no traces";
  const RunConfig c = LongContext("given", /*given=*/true);
  const absl::StatusOr<RunResult> r = ExecuteRun(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("max-model-len"), std::string::npos) << r.status();
}

TEST(MaxModelLenFromTrace, ATraceThatFitsKeepsTheDefault) {
  if (testing_util::TraceDataDir().empty()) GTEST_SKIP() << "no traces";
  RunConfig c = LongContext("fits", /*given=*/false);
  c.trace_path = (testing_util::TraceDataDir() / "azure_llm_inference_conv_2023.csv").string();
  c.num_requests = 20;
  const absl::StatusOr<RunResult> r = ExecuteRun(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->max_model_len, RunConfig{}.scheduler.max_model_len);
}

}  // namespace
}  // namespace dspark::sim
