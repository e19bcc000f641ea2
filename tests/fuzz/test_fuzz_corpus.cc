// Replays the committed fuzz inputs (tests/fuzz/corpus/<target>/, the seeds, and
// tests/fuzz/regressions/<target>/, every input a fuzzer once crashed on) through the fuzz entry
// functions, so the invariants they check hold in every normal test run, with any compiler.
// A broken invariant aborts this process with the violated condition on stderr.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sim/workload/trace.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/common/temp_folders.h"
#include "tests/common/test_paths.h"

namespace dspark::fuzz {
namespace {

namespace fs = std::filesystem;

const fs::path kFuzzDir = testing_util::TestDir() / "fuzz";

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

using testing_util::SlurpFile;

class FuzzCorpus : public ::testing::TestWithParam<FuzzTarget> {};

TEST_P(FuzzCorpus, EveryInputReturnsNormally) {
  const FuzzTarget& target = GetParam();
  const std::vector<fs::path> seeds = FilesIn(kFuzzDir / "corpus" / target.name);
  const std::vector<fs::path> regressions = FilesIn(kFuzzDir / "regressions" / target.name);
  // Every target ships seeds: an empty folder would make this test pass without replaying.
  ASSERT_GE(seeds.size(), 3u) << "too few seeds in tests/fuzz/corpus/" << target.name;
  int replayed = 0;
  for (const auto* files : {&seeds, &regressions}) {
    for (const fs::path& file : *files) {
      SCOPED_TRACE(file.string());
      const std::string bytes = SlurpFile(file);
      EXPECT_EQ(target.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
      ++replayed;
    }
  }
  EXPECT_EQ(replayed, static_cast<int>(seeds.size() + regressions.size()));
}

// The empty input is every target's first libFuzzer run.
TEST_P(FuzzCorpus, EmptyInputReturnsNormally) {
  EXPECT_EQ(GetParam().run(nullptr, 0), 0);
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzCorpus, ::testing::ValuesIn(AllFuzzTargets()),
                         [](const ::testing::TestParamInfo<FuzzTarget>& info) {
                           return std::string(info.param.name);
                         });

// The trace seeds are named for what they exercise: valid_* parse, bad_* stop at an error.
TEST(FuzzCorpusSeeds, TraceSeedNamesMatchTheStrictParse) {
  int checked = 0;
  for (const char* format : {"auto", "azure", "vidur", "burstgpt", "mooncake", "jsonl"}) {
    const auto parsed_format = sim::ParseTraceFormat(format);
    ASSERT_TRUE(parsed_format.ok());
    for (const fs::path& file : FilesIn(kFuzzDir / "corpus" / (std::string("trace_") + format))) {
      const std::string name = file.filename().string();
      const bool valid = name.rfind("valid_", 0) == 0;
      const bool bad = name.rfind("bad_", 0) == 0;
      ASSERT_TRUE(valid || bad) << file << ": name it valid_* or bad_*";
      const auto trace = sim::ParseTrace(SlurpFile(file), name, {*parsed_format, false});
      EXPECT_EQ(trace.ok(), valid) << file << ": " << trace.status();
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

// Every libFuzzer main has a corpus folder and the other way round, so a new target cannot be
// left out of the replay.
TEST(FuzzCorpusLayout, EveryTargetHasAMainAndEveryCorpusATarget) {
  std::vector<std::string> names;
  for (const FuzzTarget& t : AllFuzzTargets()) {
    names.emplace_back(t.name);
    EXPECT_TRUE(fs::exists(kFuzzDir / ("fuzz_" + names.back() + ".cc"))) << names.back();
  }
  for (const char* folder : {"corpus", "regressions"}) {
    if (!fs::is_directory(kFuzzDir / folder)) continue;
    for (const auto& entry : fs::directory_iterator(kFuzzDir / folder)) {
      if (!entry.is_directory()) continue;
      EXPECT_NE(std::find(names.begin(), names.end(), entry.path().filename().string()), names.end())
          << entry.path() << " belongs to no target";
    }
  }
}

}  // namespace
}  // namespace dspark::fuzz
