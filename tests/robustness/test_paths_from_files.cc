// Names read from files never reach outside the output folder: a sweep row's point_id, the
// point ids of sweep_meta.json and the folders of a merge's inputs are refused unless they are
// one safe file name, and `sweep --merge` / `sweep --resume` remove nothing they did not make
// under --out, also not through symlinks. Each case plants a file outside --out and checks that
// it survives and that the command fails with a message naming the bad name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "sim/results/out_folder.h"
#include "sim/studies/sweep.h"
#include "tests/common/spawn_util.h"
#include "tests/common/sweep_test_util.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using ::dspark::testing_util::SlurpFile;

std::string TempDir(const std::string& name) {
  return ::dspark::testing_util::ProcessTempDir("paths_from_files", name, /*create=*/true);
}

using ::dspark::testing_util::WriteTextFile;

// A folder outside every --out, holding one file: what must survive.
struct Victim {
  explicit Victim(const fs::path& dir) : dir(dir), file(dir / "precious.txt") {
    WriteTextFile(file, "do not delete\n");
  }
  bool Intact() const { return SlurpFile(file) == "do not delete\n"; }
  fs::path dir, file;
};

// A shard folder whose one row names `point_id` (as JSON, so any type) and has a point folder
// `points/real` with a summary; its meta and row carry one (made up) fingerprint.
fs::path ShardWithRow(const fs::path& root, const ojson& point_id) {
  const fs::path shard = root / "shard";
  ojson row = {{"point_id", point_id}, {"index", 0}, {"status", "ok"}, {"fingerprint", "f"}};
  WriteTextFile(shard / "sweep.jsonl", row.dump() + "\n");
  WriteTextFile(shard / "sweep_meta.json", ojson({{"fingerprint", {{"digest", "f"}}}}).dump());
  WriteTextFile(shard / "points" / "real" / "summary.json", "{}\n");
  return shard;
}

TEST(SafeNames, AcceptsPointIdsAndRefusesEverythingThatIsNotOneComponent) {
  for (const char* ok : {"speed-8k_c1_b256_n32_none_fused_0123456789ab", "a", "x.y", "_-_", ".hidden"})
    EXPECT_TRUE(CheckSafeName(ok, "id").ok()) << ok;
  const std::vector<std::string> bad = {"", ".", "..", "../x", "a/b", "/abs", "a/", "-rf", std::string("a\0b", 3),
                                        "a\nb", "a b", "a\\b", std::string(256, 'a')};
  for (const std::string& name : bad) {
    const absl::Status s = CheckSafeName(name, "sweep.jsonl:3: point_id");
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << absl::CHexEscape(name) << ": " << s;
    EXPECT_NE(std::string(s.message()).find("sweep.jsonl:3: point_id: "), std::string::npos) << s;
    EXPECT_NE(std::string(s.message()).find("is not a safe file name"), std::string::npos) << s;
  }
}

class MergeBadPointId : public ::testing::TestWithParam<int> {};

// The cases: a relative escape, an absolute path, an empty name, a name with '/' inside, a
// number where a name belongs.
ojson BadId(int k, const Victim& victim) {
  switch (k) {
    case 0: return "../../victim";
    case 1: return victim.dir.string();
    case 2: return "";
    case 3: return "real/../../../victim";
    case 4: return "..";
    default: return 42;
  }
}

TEST_P(MergeBadPointId, IsRefusedAndNothingOutsideOutIsTouched) {
  const fs::path root = TempDir(absl::StrCat("merge_bad_", GetParam()));
  const Victim victim(root / "victim");
  const fs::path shard = ShardWithRow(root, BadId(GetParam(), victim));
  const fs::path out = root / "merged";
  auto merged = MergeSweeps({shard.string()}, out.string(), {"sweep", "--merge"});
  ASSERT_FALSE(merged.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(merged.status())) << merged.status();
  EXPECT_NE(std::string(merged.status().message()).find("sweep.jsonl:1: point_id"), std::string::npos)
      << merged.status();
  EXPECT_TRUE(victim.Intact());
  EXPECT_TRUE(fs::exists(shard / "points" / "real" / "summary.json"));
  EXPECT_FALSE(fs::exists(out / "sweep.jsonl"));
}

INSTANTIATE_TEST_SUITE_P(Cases, MergeBadPointId, ::testing::Range(0, 6));

TEST(MergePaths, TheCommandExitsWithTheErrorAndTheOutsideFileSurvives) {
  if (::dspark::testing_util::SimBinary().empty()) GTEST_SKIP() << "dspark-sim is not built beside the tests";
  const fs::path root = TempDir("merge_cli");
  const Victim victim(root / "victim");
  const fs::path shard = ShardWithRow(root, "../../victim");
  const auto r = ::dspark::testing_util::SpawnSim(
      {"sweep", "--merge", shard.string(), "--out", (root / "merged").string()}, {}, root.string());
  ASSERT_TRUE(r.started);
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("point_id: '../../victim' is not a safe file name"), std::string::npos) << r.err;
  EXPECT_TRUE(victim.Intact());
}

TEST(MergePaths, AnOutFieldThatIsNotThePointsFolderIsRefused) {
  const fs::path root = TempDir("merge_out_field");
  const fs::path shard = root / "shard";
  WriteTextFile(shard / "sweep.jsonl",
            ojson({{"point_id", "real"}, {"index", 0}, {"status", "ok"}, {"out", "/etc"}}).dump() + "\n");
  auto merged = MergeSweeps({shard.string()}, (root / "merged").string(), {"sweep", "--merge"});
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(std::string(merged.status().message()).find("out: expected \"points/real\""), std::string::npos)
      << merged.status();
}

TEST(MergePaths, PlannedPointIdsOfTheMetaAreCheckedToo) {
  const fs::path root = TempDir("merge_meta_ids");
  const fs::path shard = ShardWithRow(root, "real");
  WriteTextFile(shard / "sweep_meta.json",
            ojson({{"points", ojson::array({ojson{{"point_id", "../x"}, {"index", 0}}})}}).dump());
  auto merged = MergeSweeps({shard.string()}, (root / "merged").string(), {"sweep", "--merge"});
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(std::string(merged.status().message()).find("points[0].point_id: '../x' is not a safe file name"),
            std::string::npos)
      << merged.status();
}

TEST(MergePaths, ASymlinkedPointFolderOrAFileLinkInsideIsRefused) {
  for (int k = 0; k < 3; ++k) {
    const fs::path root = TempDir(absl::StrCat("merge_symlink_", k));
    const Victim victim(root / "victim");
    const fs::path shard = ShardWithRow(root, "real");
    if (k == 0) {  // the point folder is a link to a folder outside
      fs::remove_all(shard / "points" / "real");
      fs::create_directory_symlink(victim.dir, shard / "points" / "real");
    } else if (k == 1) {  // a file inside links outside
      fs::create_symlink(victim.file, shard / "points" / "real" / "steps.csv");
    } else {  // the points folder itself is a link
      fs::rename(shard / "points", root / "elsewhere");
      fs::create_directory_symlink(root / "elsewhere", shard / "points");
    }
    const fs::path out = root / "merged";
    auto merged = MergeSweeps({shard.string()}, out.string(), {"sweep", "--merge"});
    ASSERT_FALSE(merged.ok()) << k;
    EXPECT_TRUE(absl::IsFailedPrecondition(merged.status())) << merged.status();
    EXPECT_NE(std::string(merged.status().message()).find("symlink"), std::string::npos) << merged.status();
    EXPECT_TRUE(victim.Intact()) << k;
    EXPECT_FALSE(fs::exists(out / "points" / "real" / "precious.txt")) << k;
  }
}

TEST(MergePaths, MergesOnlyIntoANewOrEmptyFolderAndReplacesNothingThere) {
  const fs::path root = TempDir("merge_nonempty");
  const fs::path shard = ShardWithRow(root, "real");
  const fs::path out = root / "merged";
  WriteTextFile(out / "points" / "real" / "mine.txt", "someone's file\n");
  auto merged = MergeSweeps({shard.string()}, out.string(), {"sweep", "--merge"});
  ASSERT_FALSE(merged.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(merged.status())) << merged.status();
  EXPECT_NE(std::string(merged.status().message()).find("is not empty"), std::string::npos) << merged.status();
  EXPECT_EQ(SlurpFile(out / "points" / "real" / "mine.txt"), "someone's file\n");

  const fs::path fresh = root / "fresh";
  auto ok = MergeSweeps({shard.string()}, fresh.string(), {"sweep", "--merge"});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->rows, 1);
  EXPECT_TRUE(fs::exists(fresh / "points" / "real" / "summary.json"));
}

// The folder of a point that has no row is cleared before the point runs: only when it is a
// real folder under OUT/points, never through a symlink, and never when OUT/points is a link.
TEST(SweepPaths, ClearingAPointFolderNeverFollowsASymlink) {
  for (int k = 0; k < 2; ++k) {
    const fs::path root = TempDir(absl::StrCat("sweep_symlink_", k));
    const Victim victim(root / "victim");
    const fs::path out = root / "sweep";
    SweepConfig c = ::dspark::testing_util::TinySweep(out.string());
    auto plan = PlanSweep(c);
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::string first;
    for (const SweepPoint& p : *plan)
      if (p.skip_reason.empty()) {
        first = p.id;
        break;
      }
    ASSERT_FALSE(first.empty());
    fs::create_directories(out);
    if (k == 0) {
      fs::create_directories(out / "points");
      fs::create_directory_symlink(victim.dir, out / "points" / first);
    } else {
      fs::create_directory_symlink(victim.dir, out / "points");
    }
    auto outcome = RunSweep(c, nullptr);
    ASSERT_FALSE(outcome.ok()) << k;
    EXPECT_TRUE(absl::IsFailedPrecondition(outcome.status())) << outcome.status();
    EXPECT_NE(std::string(outcome.status().message()).find("is a symlink"), std::string::npos) << outcome.status();
    EXPECT_TRUE(victim.Intact()) << k;
    EXPECT_TRUE(fs::is_symlink(k == 0 ? out / "points" / first : out / "points")) << k;
  }
}

TEST(SweepPaths, RemoveOwnFolderRemovesOnlyARealFolderOfASafeName) {
  const fs::path root = TempDir("remove_own");
  const Victim victim(root / "victim");
  const fs::path points = root / "out" / "points";
  WriteTextFile(points / "p1" / "a.csv", "x\n");
  fs::create_symlink(victim.file, points / "p1" / "link");
  fs::create_directory_symlink(victim.dir, points / "p1" / "dirlink");
  ASSERT_TRUE(RemoveOwnFolder(points, "p1").ok());
  EXPECT_FALSE(fs::exists(points / "p1"));
  EXPECT_TRUE(victim.Intact()) << "links inside are removed as links";
  EXPECT_TRUE(RemoveOwnFolder(points, "absent").ok());
  for (const char* bad : {"..", "", "../victim", "/"})
    EXPECT_TRUE(absl::IsInvalidArgument(RemoveOwnFolder(points, bad))) << bad;
  WriteTextFile(points / "file", "x\n");
  EXPECT_TRUE(absl::IsFailedPrecondition(RemoveOwnFolder(points, "file")));
  EXPECT_TRUE(victim.Intact());
}

}  // namespace
}  // namespace dspark::sim
