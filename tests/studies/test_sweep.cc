// `dspark-sim sweep`: option parsing, the plan (axes, invalid combinations, point ids), shards,
// executors, the metadata-check counts, and the result log's reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/studies/sweep.h"
#include "tests/common/parse_args.h"
#include "tests/common/sweep_test_util.h"
#include "tests/common/temp_folders.h"
#include "sim/model/time_model.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

absl::StatusOr<SweepConfig> Parse(std::vector<std::string> args, std::string* help = nullptr) {
  return test::ParseSweep(std::move(args), help);
}

std::string TempDir(const std::string& name) { return ::dspark::testing_util::ProcessTempDir("sweep", name, true); }

TEST(SweepArgs, DefaultsAreTheSeedsGrid) {
  auto c = Parse({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->workloads, std::vector<std::string>({"speed-8k"}));
  EXPECT_TRUE(c->traces.empty());
  EXPECT_EQ(c->concurrency, std::vector<int32_t>({1, 8, 128, 1024}));
  EXPECT_EQ(c->batch_sizes, std::vector<int32_t>({256}));
  EXPECT_EQ(c->num_requests, std::vector<int64_t>({SweepConfig::kAutoRequests}));
  EXPECT_EQ(c->modes, std::vector<SpecMode>({SpecMode::kNone, SpecMode::kDSpark, SpecMode::kAdaptive}));
  EXPECT_EQ(c->impls.size(), ImplsOfModel(ModelKind::kV41).size());
  EXPECT_EQ(c->check_impls, "same");
  EXPECT_EQ(c->executor, "cpu");
  EXPECT_EQ(c->shard_index, 0);
  EXPECT_EQ(c->shard_count, 1);
  EXPECT_FALSE(c->resume);
  EXPECT_TRUE(c->run_args.empty());
}

TEST(SweepArgs, HelpDocumentsAxesShardsAndMerge) {
  std::string help;
  ASSERT_TRUE(Parse({"--help"}, &help).ok());
  for (const char* text : {"--concurrency", "--batch-size", "--time-impl", "--impl", "--mode", "--workload", "--trace",
                           "--num-requests", "--resume", "--shard", "--merge", "--executor", "--config",
                           "--seed", "CUDA_VISIBLE_DEVICES", "SLURM_ARRAY_TASK_ID", "--no-check"})
    EXPECT_NE(help.find(text), std::string::npos) << text;
  EXPECT_EQ(help.find("--max-points"), std::string::npos) << "the test hook is hidden";
}

TEST(SweepArgs, ListsAndPassThrough) {
  auto c = Parse({"--workload", "batch1-512,chat", "--trace", "a.csv", "b.jsonl", "--concurrency", "0,3",
                  "--batch-size", "17,2", "--num-requests", "auto,7", "--mode", "adaptive,none", "--time-impl",
                  "fused,chain", "--no-check", "--acceptance-curve", "0.9,0.8,0.7,0.6,0.5", "--shard", "2/5"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->workloads, std::vector<std::string>({"batch1-512", "chat"}));
  EXPECT_EQ(c->traces, std::vector<std::string>({"a.csv", "b.jsonl"}));
  EXPECT_EQ(c->concurrency, std::vector<int32_t>({0, 3}));
  EXPECT_EQ(c->batch_sizes, std::vector<int32_t>({17, 2}));
  EXPECT_EQ(c->num_requests, std::vector<int64_t>({SweepConfig::kAutoRequests, 7}));
  EXPECT_EQ(c->modes, std::vector<SpecMode>({SpecMode::kAdaptive, SpecMode::kNone}));
  EXPECT_EQ(c->impls, std::vector<Impl>({Impl::kFused, Impl::kChain}));
  EXPECT_EQ(c->run_args, std::vector<std::string>({"--no-check", "--acceptance-curve", "0.9,0.8,0.7,0.6,0.5"}));
  EXPECT_EQ(c->shard_index, 2);
  EXPECT_EQ(c->shard_count, 5);
}

TEST(SweepArgs, ConfigFileKeysPassThroughAndCommandLineWins) {
  const std::string dir = TempDir("cfg");
  std::ofstream(dir + "/s.cfg") << "trace = traces/x.jsonl\nconcurrency = 1,2\nmode = dspark\n"
                                   "no-check = true\ncheck-kv = false\ncalibration = cal.json\n"
                                   "spec-k = 4\n";
  auto c = Parse({"--config", dir + "/s.cfg", "--concurrency", "5", "--spec-k", "3"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->traces, std::vector<std::string>({(fs::path(dir) / "traces/x.jsonl").lexically_normal().string()}));
  EXPECT_TRUE(c->workloads.empty()) << "a trace alone replaces the default workload";
  EXPECT_EQ(c->concurrency, std::vector<int32_t>({5}));
  EXPECT_EQ(c->modes, std::vector<SpecMode>({SpecMode::kDSpark}));
  EXPECT_EQ(c->run_args,
            std::vector<std::string>({"--no-check", "--calibration",
                                      (fs::path(dir) / "cal.json").lexically_normal().string(), "--spec-k", "3"}));
}

struct BadArgs {
  std::string name;
  std::vector<std::string> args;
  std::string message;  // a part of the error
};

class SweepBadArgs : public ::testing::TestWithParam<BadArgs> {};

TEST_P(SweepBadArgs, NamesTheOptionAndValue) {
  auto c = Parse(GetParam().args);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find(GetParam().message), std::string::npos) << c.status();
}

INSTANTIATE_TEST_SUITE_P(
    All, SweepBadArgs,
    ::testing::Values(
        BadArgs{"ConcurrencyNotANumber", {"--concurrency", "1,x"}, "--concurrency: expected a comma list of integers >= 0, got 'x'"},
        BadArgs{"ConcurrencyNegative", {"--concurrency", "-1"}, "--concurrency: expected a comma list of integers >= 0, got '-1'"},
        BadArgs{"ConcurrencyEmptyEntry", {"--concurrency", "1,,8"}, "got '' in '1,,8'"},
        BadArgs{"ConcurrencyRepeated", {"--concurrency", "8,1,8"}, "--concurrency: '8' is listed twice"},
        BadArgs{"BatchSizeZero", {"--batch-size", "0"}, "--batch-size: expected a comma list of integers >= 1, got '0'"},
        BadArgs{"NumRequestsZero", {"--num-requests", "0"}, "--num-requests: expected a comma list of integers >= 1 or auto"},
        BadArgs{"ModeUnknown", {"--mode", "dspark,eagle"}, "'eagle'"},
        BadArgs{"ModeRepeated", {"--mode", "none,none"}, "--mode: 'none' is listed twice"},
        BadArgs{"TimeImplUnknown", {"--time-impl", "fused,triton"}, "--time-impl: "},
        BadArgs{"ImplUnknown", {"--impl", "triton"}, "--impl: "},
        BadArgs{"CheckImplIsNoOption", {"--check-impl", "all"}, "the implementations each point's metadata check runs are --impl"},
        BadArgs{"WorkloadUnknown", {"--workload", "speed-9k"}, "--workload: "},
        BadArgs{"ShardIndexPastCount", {"--shard", "2/2"}, "--shard: expected i/n with n >= 1 and 0 <= i < n, got 2/2"},
        BadArgs{"ShardNotAFraction", {"--shard", "1"}, "--shard: expected i/n (e.g. 0/4), got '1'"},
        BadArgs{"ShardZeroCount", {"--shard", "0/0"}, "got 0/0"},
        BadArgs{"ProgressUnknown", {"--progress", "fancy"}, "--progress: expected auto, bar, lines or none"},
        BadArgs{"MaxNumSeqsIsTheBatchAxis", {"--max-num-seqs", "4"}, "use the --batch-size axis"},
        BadArgs{"StepLogIsPerRun", {"--step-log", "x.txt"}, "--step-log writes one file per run"},
        BadArgs{"MergeTakesNoAxes", {"--merge", "a", "b", "--concurrency", "1"}, "--merge takes only the folders and --out; got --concurrency"},
        BadArgs{"MergeTakesNoRunOptions", {"--merge", "a", "--no-check"}, "got --no-check"},
        BadArgs{"MaxPointsZero", {"--max-points", "0"}, "--max-points: expected >= 1"}),
    [](const ::testing::TestParamInfo<BadArgs>& info) { return info.param.name; });

SweepConfig Tiny(const std::string& out) { return ::dspark::testing_util::TinySweep(out); }

TEST(SweepPlan, GridOrderAutoRequestsAndInvalidCombinations) {
  SweepConfig c = Tiny("/tmp/unused");
  c.concurrency = {0, 1, 8, 128};
  c.num_requests = {SweepConfig::kAutoRequests};
  auto points = PlanSweep(c);
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_EQ(points->size(), 2u * 4u * 2u * 2u);
  int skipped = 0;
  for (size_t i = 0; i < points->size(); ++i) {
    const SweepPoint& p = (*points)[i];
    EXPECT_EQ(p.index, static_cast<int64_t>(i));
    EXPECT_EQ(p.group, static_cast<int64_t>(i / 2));
    EXPECT_EQ(p.impl, i % 2 == 0 ? Impl::kChain : Impl::kFused) << "impl is the innermost axis";
    EXPECT_EQ(p.mode, (i / 2) % 2 == 0 ? SpecMode::kNone : SpecMode::kAdaptive);
    EXPECT_EQ(p.batch_size, i < 16 ? 2 : 2000) << "batch size is outside concurrency";
    const int64_t expected_requests = p.concurrency > 0 ? std::max<int64_t>(32, 2 * p.concurrency) : -1;
    EXPECT_EQ(p.num_requests, expected_requests) << p.id;
    EXPECT_EQ(p.config.num_requests, expected_requests);
    EXPECT_EQ(p.config.concurrency, p.concurrency);
    EXPECT_EQ(p.config.scheduler.max_num_seqs, p.batch_size);
    EXPECT_EQ(p.config.time_impl, p.impl);
    EXPECT_EQ(p.config.impls, std::vector<Impl>({p.impl})) << "--impl same";
    EXPECT_FALSE(p.config.check);
    EXPECT_EQ(p.config.out_dir, (fs::path("/tmp/unused") / "points" / p.id).string());
    const bool invalid = p.batch_size == 2000 && p.mode == SpecMode::kAdaptive;
    EXPECT_EQ(!p.skip_reason.empty(), invalid) << p.id << ": " << p.skip_reason;
    if (invalid) {
      EXPECT_NE(p.skip_reason.find("--max-num-seqs=2000: adaptive verification"), std::string::npos) << p.skip_reason;
      ++skipped;
    }
  }
  EXPECT_EQ(skipped, 8);
}

TEST(SweepPlan, EachPointsRunCommandLineReproducesItsConfig) {
  SweepConfig c = Tiny("/tmp/unused");
  c.run_args = {"--no-check", "--spec-k", "4", "--acceptance-preset", "default"};
  c.check_impls = "all";
  c.seed = 11;
  auto points = PlanSweep(c);
  ASSERT_TRUE(points.ok()) << points.status();
  for (const SweepPoint& p : *points) {
    std::vector<std::string> args = p.run_argv;
    ASSERT_EQ(args.front(), "run");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    std::string help;
    auto again = ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->ToJson(), p.config.ToJson()) << p.id;
    EXPECT_EQ(again->out_dir, p.config.out_dir);
    EXPECT_EQ(p.config.scheduler.spec_k, 4);
    EXPECT_EQ(p.config.seed, 11u);
    EXPECT_EQ(p.config.impls.size(), ImplsOfModel(ModelKind::kV41).size());
  }
}

TEST(SweepPlan, PointIdsAreUniqueStableAndCoverTheWholeRunConfig) {
  SweepConfig c = Tiny("/tmp/a");
  auto a = PlanSweep(c);
  c.out_dir = "/tmp/b";
  auto b = PlanSweep(c);
  c.seed = 1;
  auto seeded = PlanSweep(c);
  c.seed = 0;
  c.run_args = {"--no-check", "--spec-k", "4"};
  auto k4 = PlanSweep(c);
  c.run_args = {"--no-check"};
  c.executor = "gpu";
  auto gpu = PlanSweep(c);
  ASSERT_TRUE(a.ok() && b.ok() && seeded.ok() && k4.ok() && gpu.ok());
  std::set<std::string> ids;
  for (size_t i = 0; i < a->size(); ++i) {
    const std::string& id = (*a)[i].id;
    EXPECT_TRUE(ids.insert(id).second) << id;
    EXPECT_EQ(id, (*b)[i].id) << "the output folder is not part of a point's identity";
    EXPECT_NE(id, (*seeded)[i].id) << "the seed is";
    EXPECT_NE(id, (*k4)[i].id) << "pass-through options are";
    EXPECT_NE(id, (*gpu)[i].id) << "the executor is";
    EXPECT_EQ(id.substr(0, id.rfind('_')),
              absl::StrFormat("batch1-512_c%d_b%d_n2_%s_%s", (*a)[i].concurrency, (*a)[i].batch_size,
                              SpecModeName((*a)[i].mode), ImplKey((*a)[i].impl)));
    EXPECT_EQ(id.size() - id.rfind('_') - 1, 12u);
  }
}

TEST(SweepPlan, RepeatedTraceIsRejectedAndBadPassThroughFailsThePlan) {
  SweepConfig c = Tiny("/tmp/unused");
  c.workloads.clear();
  c.traces = {"x.jsonl", "x.jsonl"};
  auto twice = PlanSweep(c);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(std::string(twice.status().message()).find("same id"), std::string::npos) << twice.status();
  c = Tiny("/tmp/unused");
  c.run_args = {"--spec-k", "four"};
  auto bad = PlanSweep(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("the options given to every point's run are not valid"),
            std::string::npos)
      << bad.status();
}

class SweepShards : public ::testing::TestWithParam<int> {};

TEST_P(SweepShards, PartitionCoversEveryPointOnceAndKeepsGroupsTogether) {
  const int n = GetParam();
  SweepConfig c = Tiny("/tmp/unused");
  c.concurrency = {1, 2, 3, 4, 5};
  c.impls = {Impl::kChain, Impl::kCached, Impl::kFused};
  auto points = PlanSweep(c);
  ASSERT_TRUE(points.ok()) << points.status();
  std::vector<int> owners(points->size(), 0);
  std::map<int64_t, std::set<int>> shards_of_group;
  for (int i = 0; i < n; ++i) {
    c.shard_index = i;
    c.shard_count = n;
    for (const SweepPoint& p : *points)
      if (InShard(p, c)) {
        ++owners[p.index];
        shards_of_group[p.group].insert(i);
      }
  }
  for (size_t i = 0; i < owners.size(); ++i) EXPECT_EQ(owners[i], 1) << (*points)[i].id;
  for (const auto& [group, shards] : shards_of_group) EXPECT_EQ(shards.size(), 1u) << "group " << group;
}

INSTANTIATE_TEST_SUITE_P(Counts, SweepShards, ::testing::Values(1, 2, 3, 7, 40, 41),
                         [](const ::testing::TestParamInfo<int>& info) { return absl::StrCat("n", info.param); });

TEST(SweepExecutors, GpuIsAClearErrorUntilRegisteredAndUnknownNamesAreListed) {
  if (PointRunners().count("gpu") == 0) {
    auto gpu = FindPointRunner("gpu");
    ASSERT_FALSE(gpu.ok());
    EXPECT_NE(std::string(gpu.status().message()).find("GPU executor not available in this build"), std::string::npos);
  }
  auto tpu = FindPointRunner("tpu");
  ASSERT_FALSE(tpu.ok());
  EXPECT_NE(std::string(tpu.status().message()).find("unknown executor 'tpu'; available: cpu"), std::string::npos)
      << tpu.status();
  EXPECT_TRUE(FindPointRunner("cpu").ok());
}

TEST(SweepMetadataCheck, CountsAreReadFromTheTallyAndNullWithoutOne) {
  const ojson none = MetadataCheckCounts(nullptr, {Impl::kChain});
  EXPECT_TRUE(none["stale_host"].is_null() && none["padding_residue"].is_null() && none["bug"].is_null());
  EXPECT_TRUE(none["by_impl"].empty());

  constexpr int kStale = static_cast<int>(MismatchKind::kStaleHost);
  constexpr int kResidue = static_cast<int>(MismatchKind::kPaddingResidue);
  CheckTally tally;
  tally.Of(Impl::kChain).steps_with = {5, 0, 0};
  tally.Of(Impl::kChain).cells = {500, 0, 0};  // cells are not what the row counts
  tally.Of(Impl::kCached).steps_with[kStale] = 7;
  tally.Of(Impl::kCached).steps_with[kResidue] = 4;
  const ojson one = MetadataCheckCounts(&tally, {Impl::kChain});
  EXPECT_EQ(one["stale_host"], 5);
  EXPECT_EQ(one["padding_residue"], 0);
  EXPECT_EQ(one["bug"], 0);
  EXPECT_EQ(one["by_impl"].size(), 1u);

  const ojson summed = MetadataCheckCounts(&tally, {Impl::kChain, Impl::kCached, Impl::kFused});
  EXPECT_EQ(summed["stale_host"], 12);
  EXPECT_EQ(summed["padding_residue"], 4) << "only cached had padding residue";
  EXPECT_EQ(summed["bug"], 0);
  EXPECT_EQ(summed["by_impl"][std::string(ImplName(Impl::kCached))]["stale_host"], 7);
  EXPECT_FALSE(summed["by_impl"].contains(std::string(ImplName(Impl::kFused)))) << "fused was not checked";
  const ojson unchecked = MetadataCheckCounts(&tally, {Impl::kFused});
  EXPECT_TRUE(unchecked["stale_host"].is_null());
}

TEST(SweepLogReader, OnlyACutShortLastLineIsIgnored) {
  const std::string dir = TempDir("log");
  const std::string path = dir + "/sweep.jsonl";
  const std::string good = R"({"point_id":"a","index":0,"status":"ok"})" "\n" R"({"point_id":"b","index":1,"status":"skipped"})" "\n";
  std::ofstream(path, std::ios::binary) << good << R"({"point_id":"c","ind)";
  auto log = ReadSweepLog(path);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->rows.size(), 2u);
  EXPECT_TRUE(log->partial_tail);
  EXPECT_EQ(log->valid_bytes, static_cast<int64_t>(good.size()));

  std::ofstream(path, std::ios::binary) << good << R"({"point_id":"c","index":2,"status":"ok"})";
  log = ReadSweepLog(path);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->rows.size(), 2u) << "a row without its newline was cut before the newline was written";
  EXPECT_TRUE(log->partial_tail);

  std::ofstream(path, std::ios::binary) << R"({"point_id":"a","index":0,"status":"ok"})" "\n" "{garbage\n" << good;
  log = ReadSweepLog(path);
  ASSERT_FALSE(log.ok());
  EXPECT_TRUE(absl::IsDataLoss(log.status()));
  EXPECT_NE(std::string(log.status().message()).find("sweep.jsonl:2: not a complete sweep row"), std::string::npos)
      << log.status();

  auto missing = ReadSweepLog(dir + "/absent.jsonl");
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->rows.empty());
  EXPECT_FALSE(missing->partial_tail);
}

TEST(SweepRows, DedupePrefersOkThenSkippedThenFailedAndOrdersByIndex) {
  std::vector<ojson> rows = {
      {{"point_id", "b"}, {"index", 1}, {"status", "failed"}, {"error", "x"}},
      {{"point_id", "a"}, {"index", 0}, {"status", "failed"}},
      {{"point_id", "b"}, {"index", 1}, {"status", "ok"}, {"steps", 3}},
      {{"point_id", "c"}, {"index", 2}, {"status", "skipped"}},
      {{"point_id", "b"}, {"index", 1}, {"status", "ok"}, {"steps", 4}},
  };
  const std::vector<ojson> kept = DedupeRows(rows);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0]["point_id"], "a");
  EXPECT_EQ(kept[0]["status"], "failed");
  EXPECT_EQ(kept[1]["status"], "ok");
  EXPECT_EQ(kept[1]["steps"], 3) << "the first ok row wins";
  EXPECT_EQ(kept[2]["point_id"], "c");
}

TEST(SweepRows, CsvHasFixedColumnsAndQuotesText) {
  std::vector<ojson> rows = {
      {{"point_id", "p"}, {"index", 0}, {"status", "skipped"}, {"reason", "needs \"x\", got y"}, {"concurrency", 8}},
      {{"point_id", "q"}, {"index", 1}, {"status", "ok"}, {"mean_tpot_ms", 2.5}, {"stale_host", nullptr}}};
  const std::string csv = SweepCsv(rows);
  const std::string header = csv.substr(0, csv.find('\n'));
  EXPECT_EQ(header.rfind("point_id,index,group,status,reason,error,workload,trace,concurrency,", 0), 0u) << header;
  for (const char* col : {",mean_ttft_ms,", ",p99_tpot_ms,", ",median_itl_ms,", ",p90_e2el_ms,",
                          ",output_throughput,", ",request_goodput,", ",mean_acceptance_length,", ",preemptions,", ",steps,",
                          ",stale_host,", ",padding_residue,", ",bug,", ",wall_s,"})
    EXPECT_NE(header.find(col), std::string::npos) << col;
  EXPECT_NE(csv.find("p,0,,skipped,\"needs \"\"x\"\", got y\",,,,8,"), std::string::npos) << csv;
  const size_t columns = std::count(header.begin(), header.end(), ',');
  size_t pos = csv.find('\n') + 1;
  while (pos < csv.size()) {
    const size_t end = csv.find('\n', pos);
    std::string line = csv.substr(pos, end - pos);
    // Quoted commas are not separators.
    size_t separators = 0;
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"') quoted = !quoted;
      if (ch == ',' && !quoted) ++separators;
    }
    EXPECT_EQ(separators, columns) << line;
    pos = end + 1;
  }
}

}  // namespace
}  // namespace dspark::sim
