// `dspark-sim sweep` end to end on tiny points: a killed sweep resumes without losing or
// repeating a point and ends with the same results as an uninterrupted one; shards partition
// the grid and merge back; failed points are recorded and retried; the executor is pluggable.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/studies/sweep.h"
#include "sim/studies/workload.h"
#include "tests/common/sweep_test_util.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string TempDir(const std::string& name) { return ::dspark::testing_util::ProcessTempDir("sweep_e2e", name, false); }

using testing_util::SlurpFile;

SweepConfig Tiny(const std::string& out) { return ::dspark::testing_util::TinySweep(out); }
constexpr int kTinyPoints = 16, kTinySkipped = 4;

std::vector<ojson> RawRows(const std::string& dir) {
  auto log = ReadSweepLog(dir + "/sweep.jsonl");
  EXPECT_TRUE(log.ok()) << log.status();
  EXPECT_FALSE(log->partial_tail);
  return log.ok() ? log->rows : std::vector<ojson>{};
}

// A row without what differs between two runs of the same point: host wall-clock times.
ojson Deterministic(ojson row) {
  row.erase("wall_s");
  row.erase("sim_wall_s");
  return row;
}

std::map<std::string, ojson> ById(const std::vector<ojson>& rows) {
  std::map<std::string, ojson> out;
  for (const ojson& row : rows) out[row["point_id"].get<std::string>()] = Deterministic(row);
  return out;
}

// Every id exactly once, and the rows and point files equal those of `reference`.
void ExpectSameResults(const std::string& reference, const std::string& dir) {
  const std::vector<ojson> raw = RawRows(dir);
  std::map<std::string, int> times;
  for (const ojson& row : raw) ++times[row["point_id"].get<std::string>()];
  EXPECT_EQ(times.size(), static_cast<size_t>(kTinyPoints));
  for (const auto& [id, n] : times) EXPECT_EQ(n, 1) << id << " recorded " << n << " times";
  const auto want = ById(RawRows(reference));
  const auto got = ById(raw);
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [id, row] : want) {
    ASSERT_TRUE(got.count(id)) << id;
    EXPECT_EQ(got.at(id), row) << id;
    if (row["status"] != "ok") continue;
    for (const char* file : {"steps.csv", "requests.csv"}) {
      const std::string a = SlurpFile(fs::path(reference) / "points" / id / file);
      EXPECT_FALSE(a.empty()) << id << "/" << file;
      EXPECT_EQ(a, SlurpFile(fs::path(dir) / "points" / id / file)) << id << "/" << file;
    }
    nlohmann::json sa = nlohmann::json::parse(SlurpFile(fs::path(reference) / "points" / id / "summary.json"));
    nlohmann::json sb = nlohmann::json::parse(SlurpFile(fs::path(dir) / "points" / id / "summary.json"));
    sa.erase("meta");  // argv names the output folder
    sb.erase("meta");
    EXPECT_EQ(sa, sb) << id;
  }
  // sweep.csv is one line per point plus the header.
  const std::string csv = SlurpFile(fs::path(dir) / "sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), kTinyPoints + 1);
}

class SweepEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    reference_ = new std::string(TempDir("reference"));
    auto outcome = RunSweep(Tiny(*reference_), nullptr);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    ASSERT_EQ(outcome->planned, kTinyPoints);
    ASSERT_EQ(outcome->ran, kTinyPoints - kTinySkipped);
    ASSERT_EQ(outcome->skipped_invalid, kTinySkipped);
    ASSERT_EQ(outcome->failed, 0);
  }
  static void TearDownTestSuite() {
    delete reference_;
    reference_ = nullptr;
  }
  static std::string* reference_;
};
std::string* SweepEndToEnd::reference_ = nullptr;

TEST_F(SweepEndToEnd, ReferenceRowsHoldAxesMetricsAndReasons) {
  const std::vector<ojson> rows = RawRows(*reference_);
  ASSERT_EQ(rows.size(), static_cast<size_t>(kTinyPoints));
  int ok = 0;
  for (const ojson& row : rows) {
    const std::string status = row["status"];
    if (status == "skipped") {
      EXPECT_EQ(row["mode"], "adaptive");
      EXPECT_EQ(row["batch_size"], 2000);
      EXPECT_NE(row["reason"].get<std::string>().find("adaptive verification"), std::string::npos);
      EXPECT_FALSE(fs::exists(fs::path(*reference_) / "points" / row["point_id"].get<std::string>()));
      continue;
    }
    ASSERT_EQ(status, "ok") << row.dump();
    ++ok;
    EXPECT_EQ(row["requests"], 2);
    EXPECT_EQ(row["completed"], 2);
    EXPECT_GT(row["mean_tpot_ms"].get<double>(), 0.0);
    EXPECT_GT(row["p99_ttft_ms"].get<double>(), 0.0);
    EXPECT_GT(row["output_throughput"].get<double>(), 0.0);
    EXPECT_GT(row["steps"].get<int64_t>(), 0);
    EXPECT_EQ(row["preemptions"], 0);
    EXPECT_TRUE(row["stale_host"].is_null()) << "--no-check: nothing was checked";
    if (row["mode"] == "adaptive") EXPECT_GT(row["mean_acceptance_length"].get<double>(), 1.0);
    else EXPECT_EQ(row["mean_acceptance_length"].get<double>(), 0.0);
    const fs::path point = fs::path(*reference_) / row["out"].get<std::string>();
    for (const char* file : {"summary.json", "steps.csv", "requests.csv", "perf.json"})
      EXPECT_TRUE(fs::exists(point / file)) << point / file;
    // The point's own command line is in its summary, so it can be rerun alone.
    const nlohmann::json summary = nlohmann::json::parse(SlurpFile(point / "summary.json"));
    EXPECT_EQ(summary["meta"]["argv"][0], "run");
  }
  EXPECT_EQ(ok, kTinyPoints - kTinySkipped);
  const nlohmann::json meta = nlohmann::json::parse(SlurpFile(fs::path(*reference_) / "sweep_meta.json"));
  EXPECT_EQ(meta["meta"]["schema_version"], kSweepSchemaVersion);
  EXPECT_TRUE(meta["meta"].contains("git_sha"));
  EXPECT_EQ(meta["points"].size(), static_cast<size_t>(kTinyPoints));
  EXPECT_EQ(meta["invocations"].size(), 1u);
}

TEST_F(SweepEndToEnd, KilledMidWriteAndStoppedSweepsResumeToTheSameResults) {
  const std::string dir = TempDir("resume");
  SweepConfig c = Tiny(dir);
  c.max_points = 3;
  auto first = RunSweep(c, nullptr);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->stopped_early);
  EXPECT_EQ(first->ran, 3);
  EXPECT_EQ(RawRows(dir).size(), 3u + kTinySkipped);

  // Without --resume the folder is refused rather than mixed.
  c.max_points = -1;
  auto refused = RunSweep(c, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(std::string(refused.status().message()).find("pass --resume"), std::string::npos);

  // A kill while a row was being written: the row is cut mid-line and its point is lost.
  {
    const std::string cut = RawRows(*reference_).back().dump().substr(0, 57);
    std::ofstream(dir + "/sweep.jsonl", std::ios::binary | std::ios::app) << cut;
  }
  c.resume = true;
  c.max_points = 4;
  auto second = RunSweep(c, nullptr);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->already_done, 3 + kTinySkipped);
  EXPECT_EQ(second->ran, 4);
  EXPECT_TRUE(second->stopped_early);
  EXPECT_EQ(RawRows(dir).size(), 7u + kTinySkipped) << "the cut line was dropped, not kept";

  c.max_points = -1;
  auto third = RunSweep(c, nullptr);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(third->already_done, 7 + kTinySkipped);
  EXPECT_EQ(third->ran, kTinyPoints - kTinySkipped - 7);
  EXPECT_FALSE(third->stopped_early);

  // Resuming a finished sweep runs nothing.
  auto fourth = RunSweep(c, nullptr);
  ASSERT_TRUE(fourth.ok()) << fourth.status();
  EXPECT_EQ(fourth->ran, 0);
  EXPECT_EQ(fourth->already_done, kTinyPoints);

  ExpectSameResults(*reference_, dir);
  const nlohmann::json meta = nlohmann::json::parse(SlurpFile(fs::path(dir) / "sweep_meta.json"));
  EXPECT_EQ(meta["invocations"].size(), 4u) << "the refused call wrote nothing";
  EXPECT_EQ(meta["invocations"][0]["stopped_early"], true);
  EXPECT_EQ(meta["invocations"][3]["ran"], 0);
}

TEST_F(SweepEndToEnd, ShardsMergeIntoTheWholeSweep) {
  std::vector<std::string> shards;
  for (int i = 0; i < 3; ++i) {
    shards.push_back(TempDir(absl::StrCat("shard", i)));
    SweepConfig c = Tiny(shards.back());
    c.shard_index = i;
    c.shard_count = 3;
    auto outcome = RunSweep(c, nullptr);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_EQ(outcome->planned, kTinyPoints);
    EXPECT_LT(outcome->in_shard, kTinyPoints);
  }
  // Dropping one shard leaves exactly its points missing.
  const std::string partial = TempDir("merged_partial");
  auto part = MergeSweeps({shards[0], shards[2]}, partial, {"sweep", "--merge"});
  ASSERT_TRUE(part.ok()) << part.status();
  const std::vector<ojson> shard1 = RawRows(shards[1]);
  std::set<std::string> shard1_ids;
  for (const ojson& row : shard1) shard1_ids.insert(row["point_id"].get<std::string>());
  EXPECT_EQ(std::set<std::string>(part->missing.begin(), part->missing.end()), shard1_ids);
  EXPECT_EQ(part->rows + static_cast<int64_t>(shard1_ids.size()), kTinyPoints);

  // All shards, plus a shard given twice: duplicates are dropped by point id.
  const std::string merged = TempDir("merged");
  auto all = MergeSweeps({shards[0], shards[1], shards[2], shards[1]}, merged, {"sweep", "--merge"});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->rows, kTinyPoints);
  EXPECT_EQ(all->duplicates, static_cast<int64_t>(shard1.size()));
  EXPECT_TRUE(all->missing.empty());
  ExpectSameResults(*reference_, merged);
  const nlohmann::json meta = nlohmann::json::parse(SlurpFile(fs::path(merged) / "sweep_meta.json"));
  EXPECT_EQ(meta["merged_from"].size(), 4u);
  EXPECT_EQ(meta["missing"].size(), 0u);

  auto again = MergeSweeps({shards[0]}, merged, {"sweep", "--merge"});
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(again.status())) << again.status();
  auto into_input = MergeSweeps({shards[0], shards[1]}, shards[1], {"sweep", "--merge"});
  ASSERT_FALSE(into_input.ok());
  auto not_a_sweep = MergeSweeps({shards[0], TempDir("empty")}, TempDir("merged_bad"), {"sweep", "--merge"});
  ASSERT_FALSE(not_a_sweep.ok());
  EXPECT_NE(std::string(not_a_sweep.status().message()).find("holds no sweep.jsonl"), std::string::npos);
}

// A stand-in executor: fails the first call for impl chain with an Internal error (a finding,
// not an input problem) and otherwise reports a summary with metadata-check counts.
std::atomic<int> g_fake_calls{0};
std::atomic<bool> g_fail_chain{true};

absl::StatusOr<RunResult> FakeRunner(const RunConfig& config) {
  ++g_fake_calls;
  if (config.time_impl == Impl::kChain && g_fail_chain.exchange(false))
    return absl::InternalError("fused: step 12 builder swa field swa_indices differs");
  RunResult r;
  r.steps = 100 + config.concurrency;
  r.wall_s = 0.001;
  r.traffic.requests = config.num_requests;
  r.serving.completed = config.num_requests;
  LatencyStats tpot;
  tpot.metric = "tpot";
  tpot.mean_ms = tpot.median_ms = 2.0;
  tpot.percentiles_ms = {{90, 3.0}, {99, 4.0}};
  r.serving.latencies = {tpot};  // the only metric reported: the others' columns are null
  r.serving.output_throughput = 1000.0 * config.concurrency;
  ExecutorReport check;
  check.name = "metadata_check";
  ImplTally& t = check.check.emplace().Of(config.time_impl);
  t.steps_with[static_cast<int>(MismatchKind::kStaleHost)] = config.time_impl == Impl::kChain ? 38 : 0;
  t.steps_with[static_cast<int>(MismatchKind::kPaddingResidue)] = 1;
  r.executors.push_back(std::move(check));
  return r;
}

const RegisterPointRunner kFake("fake-for-tests", FakeRunner);

// The sweep's meter counts the points' tokens (every request's prompt + output), not the points:
// its bar's total is the sum over the points it runs, and each finished point adds its own.
TEST(SweepProgress, TheMeterCountsThePointsTokens) {
  const std::string out = TempDir("progress_tokens");
  SweepConfig c = Tiny(out);
  c.concurrency = {1};
  c.batch_sizes = {2};
  c.modes = {SpecMode::kNone};
  c.impls = {Impl::kFused};
  c.num_requests = {2, 6};
  c.progress = ProgressStyle::kBar;
  auto points = PlanSweep(c);
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_EQ(points->size(), 2u);
  std::vector<int64_t> tokens;
  for (const SweepPoint& p : *points) {
    auto w = BuildWorkload(p.config);
    ASSERT_TRUE(w.ok()) << w.status();
    int64_t t = 0;
    for (const RequestSpec& r : w->requests) t += int64_t{r.prompt_len} + r.output_len;
    tokens.push_back(t);
  }
  ASSERT_LT(tokens[0], tokens[1]);
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  auto outcome = RunSweep(c, f);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  std::fflush(f);
  std::rewind(f);
  std::string text;
  for (int ch; (ch = std::fgetc(f)) != EOF;) text.push_back(static_cast<char>(ch));
  std::fclose(f);
  const int64_t total = tokens[0] + tokens[1];
  for (int64_t done : {int64_t{0}, tokens[0], total})
    EXPECT_NE(text.find(absl::StrFormat(" %d/%d tokens ", done, total)), std::string::npos)
        << "no bar at " << done << " of " << total << " tokens in:\n" << text;
  EXPECT_NE(text.find("point 2/2 "), std::string::npos) << text;
}

TEST(SweepExecutor, FailedPointsAreRecordedThenRetriedOnResume) {
  const std::string dir = TempDir("fake");
  SweepConfig c = Tiny(dir);
  c.executor = "fake-for-tests";
  c.batch_sizes = {2};
  g_fake_calls = 0;
  g_fail_chain = true;
  auto first = RunSweep(c, nullptr);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->ran, 8);
  EXPECT_EQ(first->failed, 1) << "one failure does not stop the sweep";
  EXPECT_EQ(g_fake_calls, 8);
  std::vector<ojson> rows = DedupeRows(RawRows(dir));
  ASSERT_EQ(rows.size(), 8u);
  const ojson failed = rows[0];
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_NE(failed["error"].get<std::string>().find("INTERNAL: fused: step 12"), std::string::npos);
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["status"], "ok");
    EXPECT_EQ(rows[i]["executor"], "fake-for-tests");
    EXPECT_EQ(rows[i]["stale_host"], rows[i]["impl"] == std::string(ImplName(Impl::kChain)) ? 38 : 0);
    EXPECT_EQ(rows[i]["padding_residue"], 1);
    EXPECT_EQ(rows[i]["bug"], 0);
    EXPECT_EQ(rows[i]["p99_tpot_ms"], 4.0);
    EXPECT_TRUE(rows[i]["mean_itl_ms"].is_null()) << "not reported by the run, null in the row";
  }

  c.resume = true;
  auto second = RunSweep(c, nullptr);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->ran, 1) << "only the failed point runs again";
  EXPECT_EQ(second->failed, 0);
  rows = DedupeRows(RawRows(dir));
  ASSERT_EQ(rows.size(), 8u);
  for (const ojson& row : rows) EXPECT_EQ(row["status"], "ok") << row["point_id"];
  const std::string csv = SlurpFile(fs::path(dir) / "sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);
  // No row has status failed (the header has vLLM's "failed" count column).
  EXPECT_EQ(csv.find(",failed,", csv.find('\n')), std::string::npos);
}

TEST(SweepExecutor, AnInputErrorStopsTheSweepAfterRecordingIt) {
  const std::string dir = TempDir("input_error");
  SweepConfig c = Tiny(dir);
  c.batch_sizes = {2};
  c.run_args = {"--no-check", "--acceptance-curve", "0.9,2"};
  auto outcome = RunSweep(c, nullptr);
  ASSERT_FALSE(outcome.ok());
  EXPECT_NE(std::string(outcome.status().message()).find("stopping the sweep"), std::string::npos) << outcome.status();
  // The sweep has done work (its row is written): a failed sweep, exit 1, not a refused command line.
  EXPECT_TRUE(absl::IsAborted(outcome.status())) << outcome.status();
  const std::vector<ojson> rows = RawRows(dir);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["status"], "failed");
}

TEST(SweepExecutor, GpuExecutorIsRefusedBeforeAnythingIsWritten) {
  if (PointRunners().count("gpu")) GTEST_SKIP() << "this build registers a GPU executor";
  const std::string dir = TempDir("gpu");
  SweepConfig c = Tiny(dir);
  c.executor = "gpu";
  auto outcome = RunSweep(c, nullptr);
  ASSERT_FALSE(outcome.ok());
  EXPECT_NE(std::string(outcome.status().message()).find("GPU executor not available in this build"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir));
}

}  // namespace
}  // namespace dspark::sim
