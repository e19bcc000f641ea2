// Parsers on the real traces in shared/data (never committed; skipped when absent).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "sim/workload/trace.h"

namespace dspark::sim {
namespace {

const std::string kAzure = std::string(DSPARK_SHARED_DATA_DIR) + "/azure_llm_inference_conv_2023.csv";
const std::string kVidur = std::string(DSPARK_SHARED_DATA_DIR) + "/vidur_splitwise_conv.csv";

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

TEST(TraceRealData, AzureConversationTraceHas19366Requests) {
  if (!Exists(kAzure)) GTEST_SKIP() << "shared data absent: " << kAzure;
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
  if (!Exists(kAzure) || !Exists(kVidur)) GTEST_SKIP() << "shared data absent: " << kVidur;
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

}  // namespace
}  // namespace dspark::sim
