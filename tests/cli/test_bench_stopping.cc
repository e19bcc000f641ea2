// `bench`'s NVBench-style stopping options (CUDA builds, where `bench` is built; no device
// needed): parsed into BenchConfig::Stopping(), and bad values rejected naming the option.
#include <gtest/gtest.h>

#if defined(DSPARK_HAVE_CUDA)

#include <string>
#include <vector>

#include "sim/cli/cmd_bench.cuh"

namespace dspark::sim {
namespace {

absl::StatusOr<BenchConfig> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "bench");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::string help;
  return ParseBenchArgs(static_cast<int>(argv.size()), argv.data(), &help);
}

TEST(BenchStopping, DefaultsAndOptionsGiveTheCriterion) {
  auto c = Parse({});
  ASSERT_TRUE(c.ok()) << c.status();
  timing::StoppingCriterion s = c->Stopping();
  EXPECT_EQ(s.min_samples, 100);
  EXPECT_EQ(s.max_samples, 1000);
  EXPECT_DOUBLE_EQ(s.max_noise, 0.005);
  EXPECT_DOUBLE_EQ(s.max_time_s, 1.0);
  EXPECT_TRUE(c->Validate().ok());

  c = Parse({"--min-samples", "30", "--reps", "300", "--max-noise", "1.5", "--max-time-s", "0.25"});
  ASSERT_TRUE(c.ok()) << c.status();
  s = c->Stopping();
  EXPECT_EQ(s.min_samples, 30);
  EXPECT_EQ(s.max_samples, 300);
  EXPECT_DOUBLE_EQ(s.max_noise, 0.015);
  EXPECT_DOUBLE_EQ(s.max_time_s, 0.25);
}

TEST(BenchStopping, BadValuesNameTheOption) {
  for (const auto& [args, option] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--min-samples", "0"}, "--min-samples"},
           {{"--min-samples", "500", "--reps", "200"}, "--reps"},
           {{"--max-noise", "-1"}, "--max-noise"},
           {{"--max-noise", "100"}, "--max-noise"},
           {{"--max-time-s", "-0.5"}, "--max-time-s"}}) {
    auto c = Parse(args);
    ASSERT_TRUE(c.ok()) << c.status();
    const absl::Status v = c->Validate();
    EXPECT_TRUE(absl::IsInvalidArgument(v)) << v;
    EXPECT_NE(std::string(v.message()).find(option), std::string::npos) << v;
  }
  EXPECT_FALSE(Parse({"--max-noise", "low"}).ok());
}

}  // namespace
}  // namespace dspark::sim

#endif  // DSPARK_HAVE_CUDA
