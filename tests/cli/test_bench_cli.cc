// The GPU-only commands and the GPU executor option where no GPU can run them: `bench` and
// `calibrate` exist in every build and, without a CUDA build or device, exit 2 saying that they
// measure GPU time and pointing to CPU mode; `run --executor gpu` fails with a precise error
// instead of silently running on the CPU. Also the parsing of the executor options.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sim/cli/cli_registry.h"
#include "sim/studies/run.h"
#include "sim/studies/config.h"

#if defined(DSPARK_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace dspark::sim {
namespace {

// Whether this process can run GPU work (then the commands would really run; those tests skip).
bool GpuUsable() {
#if defined(DSPARK_HAVE_CUDA)
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  (void)cudaGetLastError();
  return ok;
#else
  return false;
#endif
}

int RunCommand(const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), name);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return cli::Registry().at(name).fn(static_cast<int>(argv.size()), argv.data());
}

TEST(BenchCli, BenchAndCalibrateAreRegisteredInEveryBuild) {
  EXPECT_EQ(cli::Registry().count("bench"), 1u);
  EXPECT_EQ(cli::Registry().count("calibrate"), 1u);
}

TEST(BenchCli, WithoutAGpuBenchSaysSoAndPointsToCpuMode) {
  if (GpuUsable()) GTEST_SKIP() << "a CUDA device is present: `bench` would run for real (tests/exec/test_gpu_executor_gpu.cu)";
  const std::string out = (std::filesystem::temp_directory_path() / "dspark_bench_cli_nogpu").string();
  for (const char* command : {"bench", "calibrate"}) {
    testing::internal::CaptureStderr();
    const int rc = RunCommand(command, {"--out", out});
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 2) << command;
    EXPECT_NE(err.find("no CUDA device"), std::string::npos) << err;
    EXPECT_NE(err.find("measures GPU time"), std::string::npos) << err;
    EXPECT_NE(err.find("dspark-sim run"), std::string::npos) << err;
  }
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(out) / "bench.json"));
}

absl::StatusOr<RunConfig> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "run");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::string help;
  return ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
}

TEST(RunExecutorOption, ParsesAndValidates) {
  auto c = Parse({"--workload", "batch1-512"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->executor, "cpu");
  EXPECT_TRUE(c->gpu_cold_l2);
  EXPECT_EQ(c->ToJson()["executor"], "cpu");

  c = Parse({"--workload", "batch1-512", "--executor", "gpu", "--gpu-l2", "warm"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->executor, "gpu");
  EXPECT_FALSE(c->gpu_cold_l2);
  EXPECT_TRUE(c->Validate().ok());
  EXPECT_EQ(c->ToJson()["gpu_l2"], "warm");

  c = Parse({"--workload", "batch1-512", "--executor", "tpu"});
  ASSERT_TRUE(c.ok()) << c.status();
  const absl::Status v = c->Validate();
  EXPECT_EQ(v.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(v.message()).find("--executor"), std::string::npos) << v;

  c = Parse({"--workload", "batch1-512", "--gpu-l2", "lukewarm"});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(c.status().message()).find("--gpu-l2"), std::string::npos) << c.status();
}

TEST(RunExecutorOption, GpuExecutorWithoutAGpuFailsClearly) {
  if (GpuUsable()) GTEST_SKIP() << "a CUDA device is present: the GPU executor would run for real";
  auto c = Parse({"--workload", "batch1-512", "--num-requests", "1", "--executor", "gpu", "--no-check", "--out",
                  (std::filesystem::temp_directory_path() / "dspark_run_gpu_exec_nogpu").string()});
  ASSERT_TRUE(c.ok()) << c.status();
  const absl::StatusOr<RunResult> r = ExecuteRun(*c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  const std::string msg(r.status().message());
  EXPECT_EQ(msg.rfind("--executor gpu: no CUDA device (", 0), 0u) << msg;
  EXPECT_NE(msg.find("use --executor cpu"), std::string::npos) << msg;
#if !defined(DSPARK_HAVE_CUDA)
  EXPECT_NE(msg.find("this build has no CUDA"), std::string::npos) << msg;
#endif
}

}  // namespace
}  // namespace dspark::sim
