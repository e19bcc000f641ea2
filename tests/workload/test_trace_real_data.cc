// Parsers on the real traces shipped in workloads/traces (skipped when the folder is absent).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/workload/trace.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

// Empty names (no data folder found) do not exist, so the tests skip naming what was looked for.
std::string TraceFile(const char* name) {
  const std::filesystem::path dir = testing_util::TraceDataDir();
  return dir.empty() ? std::string() : (dir / name).string();
}
const std::string kAzure = TraceFile("azure_llm_inference_conv_2023.csv");
const std::string kVidur = TraceFile("vidur_splitwise_conv.csv");
const std::string kAzureCode = TraceFile("azure_llm_inference_code_2023.csv");
const std::string kLongContext = TraceFile("mooncake_style_long_context.jsonl");
constexpr char kWhere[] = " (looked in $DSPARK_DATA_DIR, <tree>/workloads/traces)";

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

TEST(TraceRealData, AzureConversationTraceHas19366Requests) {
  if (!Exists(kAzure)) GTEST_SKIP() << "trace absent: azure_llm_inference_conv_2023.csv" << kWhere;
  auto t = LoadTrace(kAzure, {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, TraceFormat::kAzure);
  EXPECT_EQ(t->data_rows, 19366);
  EXPECT_EQ(t->requests.size(), 19366u);
  EXPECT_EQ(t->skipped_rows, 0);
  EXPECT_EQ(t->requests.front().arrival_s, 0.0);
  EXPECT_NEAR(t->requests.back().arrival_s, 3501.721937, 1e-6);
}

TEST(TraceRealData, VidurSplitwiseCopyHasTheSameRequestsRowByRow) {
  if (!Exists(kAzure) || !Exists(kVidur))
    GTEST_SKIP() << "trace absent: azure_llm_inference_conv_2023.csv or vidur_splitwise_conv.csv" << kWhere;
  auto a = LoadTrace(kAzure, {});
  auto v = LoadTrace(kVidur, {});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->format, TraceFormat::kVidur);
  ASSERT_EQ(a->requests.size(), v->requests.size());
  int64_t mismatched = 0;
  for (size_t i = 0; i < a->requests.size(); ++i) {
    const RequestSpec &x = a->requests[i], &y = v->requests[i];
    if (x.id != y.id || x.prompt_len != y.prompt_len || x.output_len != y.output_len ||
        std::abs(x.arrival_s - y.arrival_s) > 1e-6)
      ++mismatched;
  }
  EXPECT_EQ(mismatched, 0);
}

TEST(TraceRealData, AzureCodeTraceHas8819Requests) {
  if (!Exists(kAzureCode)) GTEST_SKIP() << "trace absent: azure_llm_inference_code_2023.csv" << kWhere;
  auto t = LoadTrace(kAzureCode, {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, TraceFormat::kAzure);
  EXPECT_EQ(t->requests.size(), 8819u);
  EXPECT_EQ(t->skipped_rows, 0);
  EXPECT_EQ(t->requests.front().arrival_s, 0.0);
}

// The generated long-context example (scripts/gen-mooncake-style-trace.py): Mooncake's format,
// prompts up to 126,000 tokens, beyond the default --max-model-len (run raises it to the longest).
TEST(TraceRealData, LongContextExampleIsMooncakeShaped) {
  if (!Exists(kLongContext)) GTEST_SKIP() << "trace absent: mooncake_style_long_context.jsonl" << kWhere;
  auto t = LoadTrace(kLongContext, {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, TraceFormat::kMooncake);
  EXPECT_TRUE(t->has_hash_ids);
  ASSERT_EQ(t->requests.size(), 200u);
  int32_t longest = 0;
  for (const RequestSpec& r : t->requests) longest = std::max(longest, r.prompt_len + r.output_len);
  EXPECT_GT(longest, 65536);
  EXPECT_LE(longest, 131072);
}

}  // namespace
}  // namespace dspark::sim
