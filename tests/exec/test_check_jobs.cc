// run --jobs: the metadata check's implementations on N threads (sim/exec/worker_pool.h). The
// pool runs every item exactly once per task, and a checked run's result files are
// byte-identical for --jobs 1 and 3.
#include <atomic>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/exec/worker_pool.h"
#include "sim/studies/run.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

TEST(WorkerPool, RunsEveryItemOnceInEveryTask) {
  for (int32_t jobs : {1, 2, 3, 8}) {
    WorkerPool pool(jobs);
    EXPECT_EQ(pool.jobs(), std::max(jobs, 1));
    for (int32_t n : {0, 1, 2, 5, 64}) {
      for (int task = 0; task < 50; ++task) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.Run(n, [&](int32_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
        for (int32_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << jobs << " " << n << " " << i;
      }
    }
  }
  EXPECT_GE(WorkerPool::DefaultJobs(), 1);
}

std::string RunFiles(int32_t jobs, const std::string& preset, SpecMode mode, bool dedup = true) {
  RunConfig config;
  config.seed = 5;
  config.workload = preset;
  config.num_requests = 24;
  config.concurrency = 8;
  config.scheduler.mode = mode;
  config.scheduler.max_num_seqs = 16;
  config.scheduler.max_num_batched_tokens = 2048;
  config.impls = ImplsOfModel(ModelKind::kV41);
  config.check = true;
  config.jobs = jobs;
  config.dedup = dedup;
  config.out_dir =
      testing_util::ProcessTempDir("check_jobs", absl::StrCat(preset, "_", jobs, dedup ? "" : "_nodedup"), /*create=*/true);
  EXPECT_TRUE(config.Validate().ok()) << config.Validate();
  auto result = ExecuteRun(config);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return "";
  std::string files;
  for (const char* name : {"summary.json", "steps.csv", "requests.csv"})
    files += testing_util::SlurpFile(config.out_dir + "/" + name);
  // The source tree's revision and whether it was edited are read at each run: a commit or an
  // edit between two runs of one test is no difference of the results.
  static const std::regex kRevision(R"re("git_(sha|dirty)": ("[0-9a-f]*"|true|false|null))re");
  return std::regex_replace(files, kRevision, "\"git_$1\": <revision>");
}

TEST(CheckJobs, ResultFilesAreByteIdenticalForAnyJobs) {
  for (SpecMode mode : {SpecMode::kAdaptive, SpecMode::kNone}) {
    const std::string serial = RunFiles(1, "chat", mode);
    ASSERT_FALSE(serial.empty());
    ASSERT_NE(serial.find("\"metadata_check\""), std::string::npos) << "the check did not run";
    EXPECT_EQ(serial, RunFiles(3, "chat", mode)) << "--jobs 3 changed the results";
  }
}

// Builder-level deduplication (kernels/suite/builder_memo.h) changes no result file, serial or not.
TEST(CheckJobs, ResultFilesAreByteIdenticalWithoutDedup) {
  const std::string dedup = RunFiles(1, "chat", SpecMode::kAdaptive);
  ASSERT_FALSE(dedup.empty());
  EXPECT_EQ(dedup, RunFiles(1, "chat", SpecMode::kAdaptive, /*dedup=*/false)) << "--no-dedup changed the results";
  EXPECT_EQ(dedup, RunFiles(2, "chat", SpecMode::kAdaptive, /*dedup=*/false)) << "--no-dedup --jobs 2 changed them";
}

}  // namespace
}  // namespace dspark::sim
