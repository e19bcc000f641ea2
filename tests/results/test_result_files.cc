// sim/result_files: the whole-file write is atomic (old or new, never a part, no temporary left),
// errors name the path, the durable append adds whole lines, stale temporaries are found; and
// the test helpers that judge result files (tests/common/result_file_checks.h) reject cut files.
#include "sim/results/result_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/common/result_file_checks.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ::dspark::testing_util::SlurpFile;

std::string TempDir(const std::string& name) {
  return ::dspark::testing_util::ProcessTempDir("result_files", name, /*create=*/true);
}

std::set<std::string> Names(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

bool Contains(const absl::Status& s, const std::string& text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

// The pid of a process that has exited and been reaped: no process runs under it (until the
// kernel reuses it, far later than these tests).
pid_t DeadPid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(WriteFileAtomically, WritesTheTextAndLeavesNoTemporary) {
  const fs::path dir = TempDir("write");
  ASSERT_TRUE(WriteFileAtomically(dir / "a.json", "{\"x\": 1}\n").ok());
  ASSERT_TRUE(WriteFileAtomically(dir / "empty.csv", "").ok());
  EXPECT_EQ(SlurpFile(dir / "a.json"), "{\"x\": 1}\n");
  EXPECT_TRUE(fs::exists(dir / "empty.csv"));
  EXPECT_EQ(fs::file_size(dir / "empty.csv"), 0u);
  EXPECT_EQ(Names(dir), (std::set<std::string>{"a.json", "empty.csv"}));
}

TEST(WriteFileAtomically, ReplacesTheFileInOneStep) {
  const fs::path dir = TempDir("replace");
  const fs::path path = dir / "summary.json";
  const std::string old_text(100000, 'o');
  ASSERT_TRUE(WriteFileAtomically(path, old_text).ok());
  // A reader that opened the old file keeps reading the old file whole: the new text went to
  // another inode that was renamed over the name, not into the file being read.
  std::ifstream reader(path, std::ios::binary);
  char first[10];
  reader.read(first, sizeof(first));
  ASSERT_TRUE(WriteFileAtomically(path, "new\n").ok());
  std::stringstream rest;
  rest << reader.rdbuf();
  EXPECT_EQ(std::string(first, sizeof(first)) + rest.str(), old_text);
  EXPECT_EQ(SlurpFile(path), "new\n");
  EXPECT_EQ(Names(dir), (std::set<std::string>{"summary.json"}));
}

TEST(WriteFileAtomically, AMissingFolderIsAnErrorNamingThePath) {
  const fs::path dir = TempDir("missing");
  const fs::path path = dir / "no_such_folder" / "steps.csv";
  const absl::Status s = WriteFileAtomically(path, "a,b\n");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(Contains(s, absl::StrCat("cannot write '", path.string(), "'"))) << s;
  EXPECT_TRUE(Contains(s, "No such file or directory")) << s;
  EXPECT_EQ(Names(dir), std::set<std::string>{});
}

TEST(WriteFileAtomically, AFileInPlaceOfTheFolderIsAnErrorNamingThePath) {
  const fs::path dir = TempDir("notdir");
  ASSERT_TRUE(WriteFileAtomically(dir / "out", "i am a file\n").ok());
  const fs::path path = dir / "out" / "summary.json";
  const absl::Status s = WriteFileAtomically(path, "{}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s, path.string())) << s;
  EXPECT_TRUE(Contains(s, "Not a directory")) << s;
}

TEST(WriteFileAtomically, AFolderUnderTheTargetNameKeepsItAndLeavesNoTemporary) {
  const fs::path dir = TempDir("target_is_dir");
  fs::create_directories(dir / "perf.json" / "inside");
  const absl::Status s = WriteFileAtomically(dir / "perf.json", "{}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s, (dir / "perf.json").string())) << s;
  EXPECT_TRUE(Contains(s, "renaming")) << s;
  EXPECT_TRUE(fs::is_directory(dir / "perf.json" / "inside"));
  EXPECT_EQ(Names(dir), std::set<std::string>{"perf.json"}) << "the temporary file was removed";
}

TEST(WriteFileAtomically, AReadOnlyFolderIsPermissionDeniedNamingThePath) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: a mode 0555 folder is still writable";
  const fs::path dir = TempDir("readonly");
  fs::create_directories(dir / "ro");
  ASSERT_TRUE(WriteFileAtomically(dir / "ro" / "old.json", "{}\n").ok());
  ASSERT_EQ(::chmod((dir / "ro").c_str(), 0555), 0);
  const absl::Status s = WriteFileAtomically(dir / "ro" / "old.json", "{\"new\": 1}\n");
  ::chmod((dir / "ro").c_str(), 0755);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_TRUE(Contains(s, (dir / "ro" / "old.json").string())) << s;
  EXPECT_EQ(SlurpFile(dir / "ro" / "old.json"), "{}\n") << "the old file is kept";
}

TEST(AppendLineDurably, AppendsWholeLinesAndCreatesTheFile) {
  const fs::path dir = TempDir("append");
  const fs::path path = dir / "sweep.jsonl";
  ASSERT_TRUE(AppendLineDurably(path, R"({"point_id":"a"})").ok());
  ASSERT_TRUE(AppendLineDurably(path, R"({"point_id":"b"})").ok());
  EXPECT_EQ(SlurpFile(path), "{\"point_id\":\"a\"}\n{\"point_id\":\"b\"}\n");
  EXPECT_TRUE(::dspark::testing_util::CheckResultFile(path).ok());
  const absl::Status s = AppendLineDurably(dir / "absent" / "sweep.jsonl", "{}");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s, (dir / "absent" / "sweep.jsonl").string())) << s;
}

TEST(AtomicTempPath, IsBesideTheTargetAndNamesThePid) {
  EXPECT_EQ(AtomicTempPath("out/points/x/summary.json", 4242).string(), "out/points/x/summary.json.tmp.4242");
}

TEST(RemoveStaleTempFiles, RemovesOnlyThoseOfProcessesThatNoLongerRun) {
  const fs::path dir = TempDir("stale");
  const pid_t dead = DeadPid();
  const long live = static_cast<long>(::getpid());
  for (const fs::path& p : {AtomicTempPath(dir / "sweep.csv", dead), AtomicTempPath(dir / "summary.json", live),
                            dir / "sweep.csv", dir / "notes.tmp.txt", dir / "x.tmp.0", dir / ".tmp.7"})
    ASSERT_TRUE(WriteFileAtomically(p, "x\n").ok()) << p;
  // A folder copied under a temporary name (sweep --merge) by a killed process.
  fs::create_directories(AtomicTempPath(dir / "point_a", dead) / "inner");
  fs::create_directories(dir / "sub");
  ASSERT_TRUE(WriteFileAtomically(AtomicTempPath(dir / "sub" / "deep.json", dead), "x\n").ok());

  const absl::StatusOr<int> removed = RemoveStaleTempFiles(dir);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 2);
  EXPECT_EQ(Names(dir), (std::set<std::string>{AtomicTempPath("summary.json", live).string(), "sweep.csv",
                                               "notes.tmp.txt", "x.tmp.0", ".tmp.7", "sub"}));
  EXPECT_EQ(Names(dir / "sub").size(), 1u) << "only the folder given is searched, not below it";

  const absl::StatusOr<int> none = RemoveStaleTempFiles(dir / "absent");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, 0);
}

// ---- The checks the kill tests rely on must reject what a cut write leaves. ----

TEST(ResultFileChecks, CsvTablesAreWholeOrRejected) {
  using ::dspark::testing_util::ParseCsvTable;
  auto good = ParseCsvTable("# meta line\na,b,c\n1,\"x,\"\"y\"\"\n2\",3\n,,\n");
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_EQ(good->size(), 3u);
  EXPECT_EQ((*good)[1][1], "x,\"y\"\n2");
  EXPECT_EQ((*good)[2], (std::vector<std::string>{"", "", ""}));
  EXPECT_FALSE(ParseCsvTable("a,b\n1,2\n3").ok()) << "a last record without its newline";
  EXPECT_FALSE(ParseCsvTable("a,b\n1,2\n3,\n4\n").ok()) << "a record with too few fields";
  EXPECT_FALSE(ParseCsvTable("a,b\n1,\"2\n").ok()) << "cut inside quotes";
  EXPECT_FALSE(ParseCsvTable("").ok()) << "no header";
}

TEST(ResultFileChecks, JsonAndJsonlFilesAreWholeOrRejected) {
  using ::dspark::testing_util::CheckResultFile;
  const fs::path dir = TempDir("checks");
  ASSERT_TRUE(WriteFileAtomically(dir / "a.json", "{\"a\": [1, 2]}\n").ok());
  ASSERT_TRUE(WriteFileAtomically(dir / "cut.json", "{\"a\": [1, ").ok());
  ASSERT_TRUE(WriteFileAtomically(dir / "a.jsonl", "{\"a\":1}\n{\"b\":2}\n").ok());
  ASSERT_TRUE(WriteFileAtomically(dir / "cut.jsonl", "{\"a\":1}\n{\"b\":").ok());
  ASSERT_TRUE(WriteFileAtomically(dir / "cut.csv", "a,b\n1").ok());
  EXPECT_TRUE(CheckResultFile(dir / "a.json").ok());
  EXPECT_TRUE(CheckResultFile(dir / "a.jsonl").ok());
  EXPECT_FALSE(CheckResultFile(dir / "cut.json").ok());
  EXPECT_FALSE(CheckResultFile(dir / "cut.jsonl").ok());
  EXPECT_FALSE(CheckResultFile(dir / "cut.csv").ok());
}

}  // namespace
}  // namespace dspark::sim
