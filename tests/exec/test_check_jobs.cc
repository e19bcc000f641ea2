// run --jobs: the metadata check's implementations in N processes (sim/exec/check_process.h).
// A checked run's result files are byte-identical for any --jobs.
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/studies/run.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

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
