// The source tree is found at run time from the executable's location (sim/results/source_tree.h),
// so a build folder carried to another machine reads that machine's tree, never the build path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "nlohmann/json.hpp"
#include "sim/results/source_tree.h"
#include "tests/common/spawn_util.h"
#include "tests/common/temp_folders.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;

TEST(SourceTree, IsTheTreeAboveTheTestBinary) {
  if (const char* env = std::getenv(kSourceRootEnv); env != nullptr && *env != '\0')
    GTEST_SKIP() << kSourceRootEnv << " is set: " << env;
  const fs::path root = SourceTreeRoot();
  ASSERT_FALSE(root.empty());
  EXPECT_TRUE(fs::exists(root / "sim" / "layers.cmake")) << root;
  EXPECT_TRUE(fs::is_directory(testing_util::TestDir() / "golden")) << testing_util::TestDir();
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const std::string rel = fs::relative(self, root).string();
  if (rel.rfind("..", 0) == 0) GTEST_SKIP() << "the build folder " << self.parent_path() << " is outside the tree";
  EXPECT_FALSE(rel.empty()) << self << " under " << root;
}

TEST(SourceTree, TheEnvironmentOverridesIt) {
  const char* before = std::getenv(kSourceRootEnv);
  const std::string saved = before ? before : "";
  const std::string tree = testing_util::ProcessTempDir("source_tree", "env", true);
  setenv(kSourceRootEnv, tree.c_str(), 1);
  EXPECT_EQ(SourceTreeRoot(), tree);
  EXPECT_EQ(BundledCalibrationPath(), "") << "the tree has no workloads/calibration_h200.json";
  if (before) setenv(kSourceRootEnv, saved.c_str(), 1);
  else unsetenv(kSourceRootEnv);
  EXPECT_NE(SourceTreeRoot(), tree);
}

// dspark-sim copied into another tree (as a carried build folder is) reads that tree's bundled
// calibration, not the one of the tree it was built in.
TEST(SourceTree, ACarriedBinaryReadsTheTreeItRunsIn) {
  const std::string built = testing_util::SimBinary();
  if (built.empty()) GTEST_SKIP() << "no dspark-sim beside the test binary";
  const fs::path tree = testing_util::ProcessTempDir("source_tree", "carried", true);
  fs::create_directories(tree / "sim");
  fs::create_directories(tree / "workloads");
  fs::create_directories(tree / "build");
  std::ofstream(tree / "sim" / "layers.cmake") << "# a stand-in: marks the tree\n";
  const fs::path calibration = testing_util::SourceRoot() / "workloads" / "calibration_h200.json";
  ASSERT_TRUE(fs::exists(calibration)) << calibration;
  fs::copy_file(calibration, tree / "workloads" / "calibration_h200.json");
  fs::copy_file(built, tree / "build" / "dspark-sim");
  const std::string out = (tree / "out").string();
  const std::vector<std::string> args = {(tree / "build" / "dspark-sim").string(), "run", "--workload", "batch1-512",
                                         "--num-requests", "1", "--no-check", "--out", out};
  const testing_util::SpawnResult r = testing_util::SpawnProgram(args, {{kSourceRootEnv, ""}}, tree.string());
  ASSERT_TRUE(r.started);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json s = nlohmann::json::parse(testing_util::SlurpFile(fs::path(out) / "summary.json"));
  EXPECT_EQ(s["time_model"]["source"], (tree / "workloads" / "calibration_h200.json").string());
}

}  // namespace
}  // namespace dspark::sim
