// A sweep's results carry what they were made from: sweep_meta.json holds the fingerprint (the
// options of every point's run, the SHA-1 of each trace and of the calibration, the git SHA and
// whether the tree had uncommitted changes) and every row its digest. --resume and --merge refuse
// a folder made from other inputs, say which input differs, and how to start fresh.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "sim/results/content_hash.h"
#include "sim/results/git_info.h"
#include "sim/studies/sweep.h"
#include "tests/common/temp_folders.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using ::dspark::testing_util::SlurpFile;

std::string TempDir(const std::string& name) {
  return ::dspark::testing_util::ProcessTempDir("sweep_fingerprint", name, /*create=*/true);
}

using ::dspark::testing_util::WriteTextFile;

constexpr char kTrace[] =
    "{\"id\": 0, \"arrival_s\": 0.0, \"prompt_len\": 100, \"output_len\": 5}\n"
    "{\"id\": 1, \"arrival_s\": 0.5, \"prompt_len\": 120, \"output_len\": 4}\n";

// A sweep of a trace and a calibration in `dir`: 2 points (concurrency 1 and 2).
SweepConfig TraceSweep(const fs::path& dir) {
  if (!fs::exists(dir / "trace.jsonl")) WriteTextFile(dir / "trace.jsonl", kTrace);
  if (!fs::exists(dir / "calibration.json"))
    fs::copy_file(fs::path(::dspark::testing_util::SourceRoot()) / "workloads" / "calibration_h200.json",
                  dir / "calibration.json");
  SweepConfig c;
  c.traces = {(dir / "trace.jsonl").string()};
  c.concurrency = {1, 2};
  c.batch_sizes = {4};
  c.num_requests = {2};
  c.modes = {SpecMode::kNone};
  c.impls = {Impl::kFused};
  c.run_args = {"--no-check", "--calibration", (dir / "calibration.json").string()};
  c.out_dir = (dir / "out").string();
  c.progress = ProgressStyle::kNone;
  return c;
}

ojson ReadJson(const fs::path& path) { return ojson::parse(SlurpFile(path)); }

std::vector<ojson> Rows(const fs::path& out) {
  auto log = ReadSweepLog((out / "sweep.jsonl").string());
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? log->rows : std::vector<ojson>{};
}

TEST(ContentHash, IsTheSha1ThatSha1sumPrints) {
  EXPECT_EQ(TextSha1("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(TextSha1(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  const fs::path dir = TempDir("hash");
  WriteTextFile(dir / "abc", "abc");
  auto h = FileSha1(dir / "abc");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, "a9993e364706816aba3e25717850c26c9cd0d89d");
  auto missing = FileSha1(dir / "missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_NE(std::string(missing.status().message()).find("No such file or directory"), std::string::npos);
}

TEST(SweepFingerprint, MetaAndEveryRowCarryIt) {
  const fs::path dir = TempDir("carry");
  const SweepConfig c = TraceSweep(dir);
  auto outcome = RunSweep(c, nullptr);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  const ojson fp = ReadJson(fs::path(c.out_dir) / "sweep_meta.json")["fingerprint"];
  ASSERT_TRUE(fp.is_object()) << fp;
  EXPECT_EQ(fp["digest"].get<std::string>().size(), 40u);
  EXPECT_EQ(fp["run"]["run_args"], c.run_args);
  EXPECT_EQ(fp["run"]["seed"], 0);
  EXPECT_EQ(fp["traces"][0]["path"], c.traces[0]);
  EXPECT_EQ(fp["traces"][0]["sha1"], TextSha1(kTrace));
  EXPECT_EQ(fp["calibration"]["path"], (dir / "calibration.json").string());
  EXPECT_EQ(fp["calibration"]["sha1"], TextSha1(SlurpFile(dir / "calibration.json")));
  const GitRevision rev = ReadGitRevision();
  EXPECT_EQ(fp["code"]["git_sha"], rev.sha);
  const std::vector<ojson> rows = Rows(c.out_dir);
  ASSERT_EQ(rows.size(), 2u);
  for (const ojson& row : rows) EXPECT_EQ(row["fingerprint"], fp["digest"]) << row;

  // The same inputs resume (nothing left to run), and the fingerprint stays.
  SweepConfig again = c;
  again.resume = true;
  auto resumed = RunSweep(again, nullptr);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->already_done, 2);
  EXPECT_EQ(ReadJson(fs::path(c.out_dir) / "sweep_meta.json")["fingerprint"], fp);
}

// A sweep stopped after one point, then resumed after `change` altered one of its inputs.
absl::Status ResumeAfter(const std::string& name, const std::function<void(const fs::path&, SweepConfig*)>& change,
                         std::string* rows_before, std::string* rows_after) {
  const fs::path dir = TempDir(name);
  SweepConfig c = TraceSweep(dir);
  c.max_points = 1;
  auto first = RunSweep(c, nullptr);
  EXPECT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first.ok() && first->stopped_early);
  c.max_points = -1;
  c.resume = true;
  change(dir, &c);
  *rows_before = SlurpFile(fs::path(c.out_dir) / "sweep.jsonl");
  auto resumed = RunSweep(c, nullptr);
  *rows_after = SlurpFile(fs::path(c.out_dir) / "sweep.jsonl");
  return resumed.status();
}

struct ResumeCase {
  std::string name;
  std::function<void(const fs::path&, SweepConfig*)> change;
  std::string says;  // the difference named
};

class ResumeRefuses : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(ResumeRefuses, AChangedInputNamingItAndHowToStartFresh) {
  std::string before, after;
  const absl::Status s = ResumeAfter(GetParam().name, GetParam().change, &before, &after);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  const std::string msg(s.message());
  EXPECT_NE(msg.find("was made from other inputs than this invocation's: "), std::string::npos) << msg;
  EXPECT_NE(msg.find(GetParam().says), std::string::npos) << msg;
  EXPECT_NE(msg.find("start fresh with another --out"), std::string::npos) << msg;
  EXPECT_EQ(after, before) << "nothing is added to the folder";
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, ResumeRefuses,
    ::testing::Values(
        ResumeCase{"trace",
                   [](const fs::path& dir, SweepConfig*) {
                     std::ofstream(dir / "trace.jsonl", std::ios::app)
                         << "{\"id\": 2, \"arrival_s\": 1.0, \"prompt_len\": 10, \"output_len\": 3}\n";
                   },
                   "the trace '"},
        ResumeCase{"calibration",
                   [](const fs::path& dir, SweepConfig*) { std::ofstream(dir / "calibration.json", std::ios::app) << " "; },
                   "the calibration ("},
        ResumeCase{"run_args",
                   [](const fs::path&, SweepConfig* c) { c->run_args.insert(c->run_args.end(), {"--spec-k", "4"}); },
                   "the run option run_args ("},
        ResumeCase{"seed", [](const fs::path&, SweepConfig* c) { c->seed = 7; }, "the run option seed (0 then, 7 now)"},
        ResumeCase{"code",
                   [](const fs::path& dir, SweepConfig*) {
                     ojson meta = ReadJson(dir / "out" / "sweep_meta.json");
                     meta["fingerprint"]["code"] = {{"git_sha", "0123456789012345678901234567890123456789"},
                                                    {"git_dirty", true}};
                     meta["fingerprint"]["digest"] = "another";
                     WriteTextFile(dir / "out" / "sweep_meta.json", meta.dump(2));
                   },
                   "the code (git 0123456789012345678901234567890123456789 with uncommitted changes then, git "},
        ResumeCase{"no_fingerprint",
                   [](const fs::path& dir, SweepConfig*) {
                     ojson meta = ReadJson(dir / "out" / "sweep_meta.json");
                     meta.erase("fingerprint");
                     WriteTextFile(dir / "out" / "sweep_meta.json", meta.dump(2));
                   },
                   "it has no fingerprint (it was made by an older dspark-sim)"},
        ResumeCase{"row",
                   [](const fs::path& dir, SweepConfig*) {
                     ojson row = ojson::parse(SlurpFile(dir / "out" / "sweep.jsonl"));
                     row["fingerprint"] = "another";
                     WriteTextFile(dir / "out" / "sweep.jsonl", row.dump() + "\n");
                   },
                   "sweep.jsonl:1 has fingerprint \"another\""}),
    [](const ::testing::TestParamInfo<ResumeCase>& info) { return info.param.name; });

TEST(SweepFingerprint, MergeRefusesShardsOfOtherInputsAndKeepsTheCommonOne) {
  const fs::path dir = TempDir("merge");
  std::vector<std::string> shards;
  for (int i = 0; i < 2; ++i) {
    SweepConfig c = TraceSweep(dir);
    c.out_dir = (dir / absl::StrCat("shard", i)).string();
    c.shard_index = i;
    c.shard_count = 2;
    auto outcome = RunSweep(c, nullptr);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    shards.push_back(c.out_dir);
  }
  auto merged = MergeSweeps(shards, (dir / "merged").string(), {"sweep", "--merge"});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->rows, 2);
  EXPECT_EQ(ReadJson(dir / "merged" / "sweep_meta.json")["fingerprint"],
            ReadJson(fs::path(shards[0]) / "sweep_meta.json")["fingerprint"]);

  // A third shard made with another seed.
  SweepConfig odd = TraceSweep(dir);
  odd.out_dir = (dir / "odd").string();
  odd.seed = 3;
  ASSERT_TRUE(RunSweep(odd, nullptr).ok());
  auto refused = MergeSweeps({shards[0], odd.out_dir}, (dir / "merged_odd").string(), {"sweep", "--merge"});
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  const std::string msg(refused.status().message());
  EXPECT_NE(msg.find(absl::StrCat("'", odd.out_dir, "' was made from other inputs than '", shards[0], "'")),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("the run option seed (0 then, 3 now)"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir / "merged_odd" / "sweep.jsonl"));

  // A shard without a fingerprint (an older dspark-sim's).
  ojson meta = ReadJson(fs::path(shards[1]) / "sweep_meta.json");
  meta.erase("fingerprint");
  WriteTextFile(fs::path(shards[1]) / "sweep_meta.json", meta.dump(2));
  auto old = MergeSweeps(shards, (dir / "merged_old").string(), {"sweep", "--merge"});
  ASSERT_FALSE(old.ok());
  EXPECT_NE(std::string(old.status().message()).find(absl::StrCat("'", shards[1], "' has no fingerprint")),
            std::string::npos)
      << old.status();
}

}  // namespace
}  // namespace dspark::sim
