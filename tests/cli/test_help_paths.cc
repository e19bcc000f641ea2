// Help texts cite files that exist: every source, doc, workload or script path that a command's
// --help names (a word with a folder and a known extension) is a file of the source tree. Output
// files the help describes (under OUT/ or results/, or bare names such as summary.json) are not
// paths of the tree and are left out.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "sim/cli/cli_registry.h"
#include "tests/common/cli_run.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;

TEST(HelpTexts, EveryCitedTreePathExists) {
  const fs::path root = testing_util::SourceRoot();
  const std::regex path_word(R"(([A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.(md|h|cc|cu|cuh|py|sh|cfg|csv|jsonl|json|cmake))");
  std::set<std::string> cited;
  for (const auto& [name, info] : cli::Registry()) {
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    test::RunCli({name, "--help"});
    const std::string text = ::testing::internal::GetCapturedStdout() + ::testing::internal::GetCapturedStderr();
    for (std::sregex_iterator it(text.begin(), text.end(), path_word), end; it != end; ++it) {
      const std::string p = it->str();
      if (p.rfind("OUT/", 0) == 0 || p.rfind("results/", 0) == 0 || p.rfind("D/", 0) == 0) continue;
      cited.insert(p);
      EXPECT_TRUE(fs::exists(root / p) || fs::exists(root / "docs" / p))
          << "dspark-sim " << name << " --help cites " << p << ", which is not in the source tree";
    }
  }
  EXPECT_GT(cited.size(), 3u) << "the help texts cite files of the tree; the pattern found too few";
}

}  // namespace
}  // namespace dspark::sim
