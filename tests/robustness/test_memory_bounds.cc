// Memory bounded before it is taken: `step` refuses a step whose pre-flight bound is above the
// memory it may use (the machine's available memory or the address-space limit), naming the
// bound, the limit and the sizes to lower; and without --out its report goes to a file, the
// console getting a summary and where the report went.
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sim/studies/run.h"
#include "tests/common/cli_run.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

TEST(StepMemory, AStepAboveTheAddressSpaceLimitIsRefusedBeforeItAllocates) {
  // AddressSanitizer maps terabytes of shadow address space, so under a 3 GiB ulimit -v its own
  // allocations fail and it aborts the process; the uninstrumented suite (scripts/test.sh) runs this.
  if (kAddressSanitizer) GTEST_SKIP() << "an address-space limit cannot be set under AddressSanitizer";
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &before), 0);
  rlimit low = before;
  low.rlim_cur = rlim_t{3} << 30;  // 3 GiB: a capacity of 1M tokens needs about 5 GB
  if (before.rlim_cur != RLIM_INFINITY && before.rlim_cur < low.rlim_cur) low.rlim_cur = before.rlim_cur;
  const std::string out = (fs::path(testing_util::ProcessTempDir("memory", "step", true)) / "r.json").string();
  ASSERT_EQ(setrlimit(RLIMIT_AS, &low), 0);
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  const int code = test::RunCli({"step", "--qsl", "0,1", "--seq-lens", "10", "--block-table", "1", "--num-decodes", "1",
                                 "--capacity", "1000000", "--out", out});
  ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(setrlimit(RLIMIT_AS, &before), 0);
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("dspark-sim step: this step needs up to "), std::string::npos) << err;
  EXPECT_NE(err.find("GB of host memory (capacity 1000000 tokens"), std::string::npos) << err;
  EXPECT_NE(err.find("allowed by the address-space limit (ulimit -v); lower capacity or bt_stride"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(out));
}

// What a run keeps for its result grows with the trace's requests and output tokens: a run whose
// estimate is above the memory available is refused before its first step, naming both sizes.
TEST(RunMemory, TheRecordsOfATraceAreBoundedBeforeTheRun) {
  std::vector<RequestSpec> requests(1000);
  int64_t output_tokens = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].id = static_cast<int64_t>(i);
    requests[i].prompt_len = 100;
    requests[i].output_len = 1 + static_cast<int32_t>(i % 7);
    output_tokens += requests[i].output_len;
  }
  const uint64_t bytes = RunRecordBytes(requests);
  // More requests or longer outputs keep more.
  std::vector<RequestSpec> longer = requests;
  for (RequestSpec& r : longer) r.output_len *= 100;
  EXPECT_GT(RunRecordBytes(longer), bytes);
  std::vector<RequestSpec> more = requests;
  more.insert(more.end(), requests.begin(), requests.end());
  EXPECT_GT(RunRecordBytes(more), bytes);
  const absl::StatusOr<uint64_t> fits = CheckRunRecordMemory(requests, bytes);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(*fits, bytes);
  const absl::Status refused = CheckRunRecordMemory(requests, bytes - 1).status();
  ASSERT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_NE(std::string(refused.message()).find("(1000 requests, " + std::to_string(output_tokens) + " output tokens"), std::string::npos) << refused;
  EXPECT_NE(std::string(refused.message()).find("--num-requests"), std::string::npos) << refused;
}

TEST(StepOutput, WithoutOutTheReportGoesToAFileAndTheConsoleSaysWhere) {
  const fs::path dir = testing_util::ProcessTempDir("memory", "step_default_out", true);
  const fs::path was = fs::current_path();
  fs::current_path(dir);
  ::testing::internal::CaptureStdout();
  const int code = test::RunCli({"step", "--case", "decode", "--batch", "2"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  fs::current_path(was);
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("wrote the full report ("), std::string::npos) << out;
  EXPECT_NE(out.find(") to results/step/report.json (--out FILE to choose, --out - for stdout)"), std::string::npos)
      << out;
  EXPECT_LT(out.size(), 2000u) << "the console gets a summary, not the report";
  EXPECT_GT(fs::file_size(dir / "results" / "step" / "report.json"), 10000u);
}

}  // namespace
}  // namespace dspark::sim
