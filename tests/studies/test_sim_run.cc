// `dspark-sim run` end to end: option parsing, validation messages, outputs, determinism.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/studies/run.h"
#include "sim/observe/metrics.h"
#include "tests/common/parse_args.h"
#include "tests/common/temp_folders.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
const std::string kRepo = testing_util::SourceRoot().string();

absl::StatusOr<RunConfig> Parse(std::vector<std::string> args) { return test::ParseRun(std::move(args)); }

using testing_util::SlurpFile;

std::string TempDir(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / name;
  fs::remove_all(p);
  return p.string();
}

TEST(RunArgs, DefaultsAreTheSeedServerLimits) {
  auto c = Parse({"--workload", "speed-8k"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->scheduler.max_num_seqs, 256);
  EXPECT_EQ(c->scheduler.max_num_batched_tokens, 16384);
  EXPECT_EQ(c->scheduler.max_model_len, 16384);
  EXPECT_EQ(c->scheduler.mode, SpecMode::kAdaptive);
  EXPECT_EQ(c->scheduler.spec_k, 5);
  EXPECT_EQ(c->impls.size(), ImplsOfModel(ModelKind::kV41).size());
  EXPECT_TRUE(c->check);
  EXPECT_EQ(c->time_impl, Impl::kFused);
  EXPECT_TRUE(c->Validate().ok());
}

TEST(RunArgs, HelpListsTheOptions) {
  std::vector<std::string> args = {"run", "--help"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::string help;
  ASSERT_TRUE(ParseRunArgs(2, argv.data(), &help).ok());
  for (const char* option : {"--trace", "--workload", "--concurrency", "--num-requests", "--mode",
                             "--impl", "--out", "--seed", "--config", "--no-check",
                             "--max-num-batched-tokens", "--skip-bad-rows", "--burstiness"})
    EXPECT_NE(help.find(option), std::string::npos) << option;
}

TEST(RunArgs, ConfigFileUsesTheSameKeysAndTheCommandLineWins) {
  const std::string dir = TempDir("cfg");
  fs::create_directories(dir);
  std::ofstream(dir + "/run.cfg") << "trace = traces/x.jsonl\nmode = dspark\nconcurrency = 7\nno-check = true\n";
  auto c = Parse({"--config", dir + "/run.cfg", "--concurrency", "3"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->trace_path, (fs::path(dir) / "traces/x.jsonl").lexically_normal().string());
  EXPECT_EQ(c->scheduler.mode, SpecMode::kDSpark);
  EXPECT_EQ(c->concurrency, 3);
  EXPECT_FALSE(c->check);
}

TEST(RunArgs, BadValuesAreNamed) {
  auto mode = Parse({"--workload", "chat", "--mode", "eagle"});
  ASSERT_FALSE(mode.ok());
  EXPECT_EQ(std::string(mode.status().message()), "--mode: expected none, dspark or adaptive, got 'eagle'");
  auto impl = Parse({"--workload", "chat", "--impl", "fused,triton"});
  ASSERT_FALSE(impl.ok());
  EXPECT_NE(std::string(impl.status().message()).find("--impl: expected an implementation"), std::string::npos);
  EXPECT_FALSE(Parse({"--workload", "chat", "--check", "--no-check"}).ok());
  EXPECT_FALSE(Parse({"--workload", "chat", "--request-rate", "fast"}).ok());
  EXPECT_FALSE(Parse({"--workload", "chat", "--bogus"}).ok());
  EXPECT_FALSE(Parse({"--config", "/nonexistent.cfg"}).ok());
}

TEST(RunValidate, ImpossibleConfigsGetClearErrors) {
  auto expect = [](std::vector<std::string> args, const std::string& fragment) {
    auto c = Parse(args);
    ASSERT_TRUE(c.ok()) << c.status();
    const absl::Status s = c->Validate();
    ASSERT_FALSE(s.ok()) << fragment;
    EXPECT_NE(std::string(s.message()).find(fragment), std::string::npos) << s.message();
  };
  expect({}, "give exactly one of --trace PATH and --workload NAME");
  expect({"--workload", "chat", "--trace", "x.csv"}, "give exactly one of");
  expect({"--workload", "chat", "--max-num-batched-tokens", "1000"},
         "--max-num-batched-tokens: expected >= max_num_seqs * (1 + K) = 256 * 6 = 1536");
  expect({"--workload", "chat", "--max-num-seqs", "1000", "--max-num-batched-tokens", "8000"},
         "adaptive verification allocates drafts in one thread block");
  expect({"--workload", "chat", "--num-kv-blocks", "100"}, "cannot hold one request of max_model_len=16384");
  expect({"--workload", "chat", "--burstiness", "0"}, "--burstiness");
  expect({"--workload", "chat", "--num-requests", "0"}, "--num-requests");
  expect({"--workload", "chat", "--spec-k", "9"}, "--spec-k: expected K in [1, 8]");
  expect({"--workload", "chat", "--request-rate", "-2"}, "--request-rate");
}

absl::StatusOr<RunResult> RunWith(std::vector<std::string> args) {
  auto c = Parse(args);
  if (!c.ok()) return c.status();
  return ExecuteRun(*c);
}

TEST(Run, WritesSummaryStepsRequestsWithMeta) {
  const std::string out = TempDir("run1");
  auto r = RunWith({"--workload", "chat", "--num-requests", "20", "--request-rate", "20",
                    "--max-num-seqs", "8", "--max-num-batched-tokens", "2048", "--out", out,
                    "--no-check"});
  ASSERT_TRUE(r.ok()) << r.status();
  const nlohmann::json s = nlohmann::json::parse(SlurpFile(fs::path(out) / "summary.json"));
  EXPECT_EQ(s["meta"]["schema_version"], 1);
  EXPECT_EQ(s["meta"]["seed"], 0);
  EXPECT_TRUE(s["meta"]["argv"].is_array());
  EXPECT_TRUE(s["meta"].contains("git_sha"));
  EXPECT_TRUE(s["meta"].contains("git_dirty"));
  EXPECT_EQ(s["completed"], 20);
  EXPECT_EQ(s["failed"], 0);
  EXPECT_GT(s["output_throughput"].get<double>(), 0.0);
  EXPECT_GT(s["metrics"]["speculative"]["mean_acceptance_length"].get<double>(), 2.0);
  for (const std::string& key : ServingColumns()) EXPECT_TRUE(s.contains(key)) << key;
  EXPECT_FALSE(s["metrics"].contains("ttft_ms")) << "one spelling: vLLM's keys at the top level";
  const std::string steps = SlurpFile(fs::path(out) / "steps.csv");
  const std::string requests = SlurpFile(fs::path(out) / "requests.csv");
  EXPECT_EQ(std::count(steps.begin(), steps.end(), '\n'), r->steps + 1);
  EXPECT_EQ(std::count(requests.begin(), requests.end(), '\n'), 21);
  EXPECT_TRUE(fs::exists(fs::path(out) / "perf.json"));
}

TEST(Run, SameSeedSameBytesDifferentSeedDifferentRun) {
  const std::string out = TempDir("det");
  const std::vector<std::string> args = {"--workload", "chat", "--num-requests", "40",
                                         "--request-rate", "30", "--max-num-seqs", "16",
                                         "--max-num-batched-tokens", "4096", "--out", out,
                                         "--no-check"};
  std::vector<std::string> first;
  ASSERT_TRUE(RunWith(args).ok());
  for (const char* f : {"summary.json", "steps.csv", "requests.csv"}) first.push_back(SlurpFile(fs::path(out) / f));
  ASSERT_TRUE(RunWith(args).ok());
  int i = 0;
  for (const char* f : {"summary.json", "steps.csv", "requests.csv"})
    EXPECT_EQ(SlurpFile(fs::path(out) / f), first[i++]) << f << " differs between identical runs";
  std::vector<std::string> seeded = args;
  seeded.push_back("--seed");
  seeded.push_back("1");
  ASSERT_TRUE(RunWith(seeded).ok());
  EXPECT_NE(SlurpFile(fs::path(out) / "requests.csv"), first[2]);
}

TEST(Run, BundledDefaultWorkloadConfig) {
  const std::string out = TempDir("default");
  auto r = RunWith({"--config", kRepo + "/workloads/default.cfg", "--out", out, "--no-check"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->serving.completed, 64);
  EXPECT_EQ(nlohmann::json::parse(SlurpFile(fs::path(out) / "summary.json"))["workload"]["format"], "jsonl");
}

TEST(Run, TraceWithBadRowsStopsOrIsSkippedAndReported) {
  const std::string dir = TempDir("badrows");
  fs::create_directories(dir);
  const std::string trace = dir + "/t.csv";
  std::ofstream(trace) << "arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,10\n0.1,zz,5\n0.2,50,7\n";
  auto stop = RunWith({"--trace", trace, "--out", dir + "/o1", "--no-check"});
  ASSERT_FALSE(stop.ok());
  EXPECT_NE(std::string(stop.status().message()).find("t.csv:3:5: field 'num_prefill_tokens'"), std::string::npos)
      << stop.status();
  auto skip = RunWith({"--trace", trace, "--skip-bad-rows", "--out", dir + "/o2", "--no-check"});
  ASSERT_TRUE(skip.ok()) << skip.status();
  EXPECT_EQ(nlohmann::json::parse(SlurpFile(fs::path(dir) / "o2" / "summary.json"))["workload"]["skipped_bad_rows"], 1);
  EXPECT_EQ(skip->serving.completed, 2);
}

TEST(Run, FixtureTracesOfEveryFormatRun) {
  for (const char* f : {"azure_small.csv", "vidur_small.csv", "burstgpt_small.csv",
                        "mooncake_small.jsonl", "requests_small.jsonl"}) {
    auto r = RunWith({"--trace", kRepo + "/workloads/fixtures/" + f, "--out", TempDir("fx"),
                      "--no-check", "--max-num-seqs", "4", "--max-num-batched-tokens", "1024"});
    ASSERT_TRUE(r.ok()) << f << ": " << r.status();
    EXPECT_GT(r->serving.completed, 0) << f;
  }
}

TEST(Metrics, PercentilesInterpolateLikeNumpy) {
  std::vector<double> v = {4, 1, 3, 2};
  const Distribution d = Summarize(v);
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_DOUBLE_EQ(d.median, 2.5);
  EXPECT_DOUBLE_EQ(d.p90, 3.7);
  EXPECT_DOUBLE_EQ(d.p99, 3.97);
  std::vector<double> one = {5};
  EXPECT_DOUBLE_EQ(Summarize(one).p99, 5.0);
  std::vector<double> none;
  EXPECT_EQ(Summarize(none).count, 0);
}

TEST(Metrics, TpotTtftItlFollowVllmDefinitions) {
  std::vector<RequestSpec> w = {{0, 0.0, 10, 4, {}}, {1, 0.0, 10, 1, {}}};
  MetricsObserver m(w);
  m.OnArrival(0, 1.0);
  m.OnArrival(1, 2.0);
  m.OnTokens(0, 1.5, 1);   // TTFT 0.5
  m.OnTokens(0, 1.7, 2);   // one chunk of 2 tokens
  m.OnTokens(0, 2.0, 1);
  m.OnFinished(0, 2.0);
  m.OnTokens(1, 2.25, 1);
  m.OnFinished(1, 2.25);
  m.OnVerification(0, 5, 5, 1);
  m.OnVerification(0, 5, 2, 0);
  ResultSpec spec;
  spec.metric_percentiles = {50, 100};
  spec.goodput_ms = {{"ttft", 400}, {"tpot", 200}};
  m.set_result_spec(spec);
  nlohmann::json s;
  ASSERT_TRUE(m.Finish(&s).ok());
  const nlohmann::json v = ServingResultJson(m.serving_result());  // the keys summary.json gets
  EXPECT_DOUBLE_EQ(v["mean_ttft_ms"].get<double>(), (500.0 + 250.0) / 2);
  EXPECT_DOUBLE_EQ(v["std_ttft_ms"].get<double>(), 125.0);  // numpy's population std
  EXPECT_DOUBLE_EQ(v["mean_tpot_ms"].get<double>(), 500.0 / 3);  // single-token request excluded
  EXPECT_NEAR(v["mean_itl_ms"].get<double>(), 250.0, 1e-4);
  EXPECT_DOUBLE_EQ(v["p100_e2el_ms"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(v["p50_e2el_ms"].get<double>(), v["median_e2el_ms"].get<double>());
  EXPECT_DOUBLE_EQ(v["duration"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(v["output_throughput"].get<double>(), 5 / 1.25);
  EXPECT_DOUBLE_EQ(v["request_throughput"].get<double>(), 2 / 1.25);
  EXPECT_EQ(v["total_input_tokens"], 20);
  // Goodput: request 0 misses ttft <= 400 ms (500); request 1 (TTFT 250, one token: TPOT 0)
  // meets both SLOs.
  EXPECT_DOUBLE_EQ(v["request_goodput"].get<double>(), 1 / 1.25);
  EXPECT_DOUBLE_EQ(s["speculative"]["mean_acceptance_length"].get<double>(), 1.5);
  // vLLM's per-position rate: accepted at position k over drafts: one of two accepted position 0.
  EXPECT_EQ(s["speculative"]["per_position_acceptance_rate"], nlohmann::json({0.5}));
}

}  // namespace
}  // namespace dspark::sim
