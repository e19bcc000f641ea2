// `run` takes vLLM's `bench serve` flags with their meanings and writes vLLM's result
// keys; every infinite --request-rate means the same; length-only traces, --over-length,
// --time-scale; options that size memory are bounded or clamped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "sim/observe/serving_result.h"
#include "sim/studies/workload.h"
#include "tests/common/parse_args.h"
#include "tests/common/temp_folders.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using testing_util::SlurpFile;

absl::StatusOr<RunConfig> Parse(std::vector<std::string> args) { return test::ParseRun(std::move(args)); }

absl::StatusOr<RunResult> RunWith(std::vector<std::string> args) {
  auto c = Parse(args);
  if (!c.ok()) return c.status();
  return ExecuteRun(*c);
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = testing_util::ProcessTempDir("conventions", name, true) + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const std::string kVidur =
    "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,300,40\n1.5,200,30\n4.0,100,20\n";

std::vector<double> Arrivals(const Workload& w) {
  std::vector<double> out;
  for (const RequestSpec& r : w.requests) out.push_back(r.arrival_s);
  return out;
}

TEST(RequestRate, EveryInfiniteSpellingKeepsTheTraceTimestamps) {
  const std::string trace = WriteFile("vidur.csv", kVidur);
  for (const char* rate : {"inf", "Inf", "INF", "infinity", "Infinity", "1e999"}) {
    SCOPED_TRACE(rate);
    auto c = Parse({"--trace", trace, "--request-rate", rate, "--no-check"});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_FALSE(c->request_rate_given);
    EXPECT_TRUE(std::isinf(c->request_rate));
    auto w = BuildWorkload(*c);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(Arrivals(*w), (std::vector<double>{0.0, 1.5, 4.0}));
  }
}

TEST(RequestRate, EveryInfiniteSpellingSendsAPresetAtTimeZero) {
  for (const char* rate : {"inf", "INF", "1e999"}) {
    auto c = Parse({"--workload", "chat", "--num-requests", "3", "--request-rate", rate});
    ASSERT_TRUE(c.ok()) << c.status();
    auto w = BuildWorkload(*c);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(Arrivals(*w), (std::vector<double>{0.0, 0.0, 0.0})) << rate;
  }
}

TEST(LengthOnlyTrace, ReplaysWithRequestRate) {
  const std::string trace =
      WriteFile("lengths.csv", "num_prefill_tokens,num_decode_tokens\n300,40\n200,30\n100,20\n");
  const std::string out = testing_util::ProcessTempDir("conventions", "lengths_out", false);
  auto r = RunWith({"--trace", trace, "--request-rate", "2", "--no-check", "--out", out});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->serving.completed, 3);
  EXPECT_EQ(r->workload.arrivals, "lengths only, gamma process of --request-rate");
  const nlohmann::json s = nlohmann::json::parse(SlurpFile(fs::path(out) / "summary.json"));
  EXPECT_EQ(s["completed"], 3);
  EXPECT_EQ(s["workload"]["arrivals"], "lengths only, gamma process of --request-rate");
  auto c = Parse({"--trace", trace, "--request-rate", "2"});
  ASSERT_TRUE(c.ok());
  auto w = BuildWorkload(*c);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->requests[0].arrival_s, 0.0);
  EXPECT_GT(w->requests[2].arrival_s, w->requests[1].arrival_s);
  // Without a rate, vLLM's inf: all at t=0.
  auto c0 = Parse({"--trace", trace});
  auto w0 = BuildWorkload(*c0);
  ASSERT_TRUE(w0.ok()) << w0.status();
  EXPECT_EQ(Arrivals(*w0), (std::vector<double>{0.0, 0.0, 0.0}));
  // No timestamps to scale: an error, not a silently ignored option.
  auto scaled = Parse({"--trace", trace, "--time-scale", "0.5"});
  ASSERT_TRUE(scaled.ok());
  EXPECT_EQ(BuildWorkload(*scaled).status().message(),
            "--time-scale: " + trace + " has no timestamps to scale (lengths only); pace it with "
            "--request-rate");
}

TEST(BurstGpt, LengthsOnlyModeReadsItAsVllmDoes) {
  const std::string trace = WriteFile(
      "burst.csv",
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
      "5,ChatGPT,374,44,418,Conversation log\n"
      "9.5,GPT-4,396,109,505,API log\n"
      "7,GPT-4,100,0,100,API log\n"
      "12,GPT-4,200,20,220,API log\n");
  auto c = Parse({"--trace", trace, "--trace-format", "burstgpt-lengths"});
  ASSERT_TRUE(c.ok()) << c.status();
  auto w = BuildWorkload(*c);
  ASSERT_TRUE(w.ok()) << w.status();
  // GPT-4 rows with a response, in file order (the out-of-order timestamp 7 is not read); all at
  // t=0 without a rate, as vLLM's inf.
  ASSERT_EQ(w->requests.size(), 2u);
  EXPECT_EQ(w->requests[0].prompt_len, 396);
  EXPECT_EQ(w->requests[1].prompt_len, 200);
  EXPECT_EQ(Arrivals(*w), (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(w->info["other_models_excluded"], 1);
  EXPECT_EQ(w->info["failed_requests_excluded"], 1);
}

TEST(TimeScale, MultipliesTheTraceTimestamps) {
  const std::string trace = WriteFile("scaled.csv", kVidur);
  auto c = Parse({"--trace", trace, "--time-scale", "0.5"});
  ASSERT_TRUE(c.ok()) << c.status();
  auto w = BuildWorkload(*c);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(Arrivals(*w), (std::vector<double>{0.0, 0.75, 2.0}));
  auto both = Parse({"--trace", trace, "--time-scale", "2", "--request-rate", "3"});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->Validate().message(),
            "--time-scale: scales a trace's own timestamps; it needs --trace and no finite "
            "--request-rate (which re-times every request)");
}

TEST(OverLength, ErrorSkipOrClip) {
  const std::string trace = WriteFile(
      "long.jsonl", "{\"prompt_len\": 100, \"output_len\": 10}\n{\"prompt_len\": 5000, \"output_len\": 10}\n");
  auto error = Parse({"--trace", trace, "--max-model-len", "4096"});
  ASSERT_TRUE(error.ok());
  EXPECT_FALSE(BuildWorkload(*error).ok());
  auto skip = Parse({"--trace", trace, "--max-model-len", "4096", "--over-length", "skip"});
  ASSERT_TRUE(skip.ok());
  auto ws = BuildWorkload(*skip);
  ASSERT_TRUE(ws.ok()) << ws.status();
  EXPECT_EQ(ws->requests.size(), 1u);
  EXPECT_EQ(ws->info["skipped_bad_rows"], 1);
  auto clip = Parse({"--trace", trace, "--max-model-len", "4096", "--over-length", "clip"});
  ASSERT_TRUE(clip.ok());
  auto wc = BuildWorkload(*clip);
  ASSERT_TRUE(wc.ok()) << wc.status();
  ASSERT_EQ(wc->requests.size(), 2u);
  EXPECT_EQ(wc->requests[1].prompt_len + wc->requests[1].output_len, 4096);
  EXPECT_EQ(wc->info["truncated_to_max_model_len"], 1);
  EXPECT_EQ(Parse({"--workload", "chat", "--over-length", "cut"}).status().message(),
            "--over-length: expected error, skip or clip, got 'cut'");
}

TEST(Mooncake, TheRunSaysHashIdsAreNotModelled) {
  const std::string trace = WriteFile(
      "mooncake.jsonl", "{\"timestamp\": 0, \"input_length\": 300, \"output_length\": 5, \"hash_ids\": [1]}\n");
  auto c = Parse({"--trace", trace});
  ASSERT_TRUE(c.ok());
  auto w = BuildWorkload(*c);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE(w->info.contains("notes"));
  EXPECT_NE(w->info["notes"][0].get<std::string>().find("prefix caching is not modelled"),
            std::string::npos);
}

TEST(Concurrency, AboveTheRequestCountIsTheRequestCount) {
  auto c = Parse({"--workload", "chat", "--num-requests", "5", "--concurrency", "2147483647"});
  ASSERT_TRUE(c.ok());
  auto w = BuildWorkload(*c);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->concurrency, 5);
  const std::string out = testing_util::ProcessTempDir("conventions", "clamp_out", false);
  // Would take 17 GB of client slots if allocated as given.
  auto r = RunWith({"--workload", "chat", "--num-requests", "5", "--concurrency", "2147483647",
                    "--no-check", "--out", out});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->traffic.max_concurrency, 5);
  EXPECT_EQ(nlohmann::json::parse(SlurpFile(fs::path(out) / "summary.json"))["max_concurrency"], 5);
}

TEST(VllmFlags, AliasesMeanTheSameAndCannotBothBeGiven) {
  auto a = Parse({"--workload", "chat", "--num-prompts", "7", "--max-concurrency", "3"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->num_requests, 7);
  EXPECT_EQ(a->concurrency, 3);
  EXPECT_EQ(Parse({"--workload", "chat", "--num-prompts", "7", "--num-requests", "7"}).status().message(),
            "--num-requests and --num-prompts are the same option: give one");
  EXPECT_EQ(Parse({"--workload", "chat", "--max-concurrency", "1", "--concurrency", "1"}).status().message(),
            "--concurrency and --max-concurrency are the same option: give one");
  EXPECT_EQ(Parse({"--workload", "chat", "--goodput", "ttft=200"}).status().message(),
            "--goodput: expected KEY:VALUE pairs, KEY one of ttft, tpot, e2el and VALUE a number of "
            "milliseconds >= 0 (e.g. --goodput ttft:200 tpot:50), got 'ttft=200'");
  EXPECT_EQ(Parse({"--workload", "chat", "--percentile-metrics", "ttft,foo"}).status().message(),
            "--percentile-metrics: expected a comma list of ttft, tpot, itl, e2el, got 'foo'");
  EXPECT_EQ(Parse({"--workload", "chat", "--metric-percentiles", "50,101"}).status().message(),
            "--metric-percentiles: expected a comma list of percentiles in [0, 100], got '101'");
}

TEST(VllmFlags, SweepTakesTheAliasesForItsAxes) {
  const auto parse = [](std::vector<std::string> args) { return test::ParseSweep(std::move(args)); };
  auto c = parse({"--max-concurrency", "2,4", "--num-prompts", "6"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->concurrency, (std::vector<int32_t>{2, 4}));
  EXPECT_EQ(c->num_requests, (std::vector<int64_t>{6}));
  EXPECT_EQ(parse({"--max-concurrency", "2", "--concurrency", "2"}).status().message(),
            "--concurrency and --max-concurrency are the same option: give one");
}

// vLLM's flags give a result JSON with vLLM's keys.
TEST(VllmFlags, DoneWhenCommandWritesVllmResultKeys) {
  const std::string out = testing_util::ProcessTempDir("conventions", "done_when", false);
  const std::string dir = testing_util::ProcessTempDir("conventions", "done_when_results", false);
  auto r = RunWith({"--workload", "chat", "--num-prompts", "20", "--max-concurrency", "4",
                    "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles",
                    "50,95,99", "--goodput", "ttft:500", "tpot:50", "--no-check", "--out", out,
                    "--save-result", "--result-dir", dir});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->result_file, dir + "/dspark-sim-infqps-concurrency4-chat.json");
  const nlohmann::json s = nlohmann::json::parse(SlurpFile(fs::path(out) / "summary.json"));
  // The --save-result file: summary.json's content with vLLM's date and per-request lists, in
  // vLLM's key order (tests/scripts/test_vllm_serve_keys.py checks it against serve.py).
  nlohmann::json saved = nlohmann::json::parse(SlurpFile(r->result_file));
  EXPECT_EQ(saved["latencies"].size(), 20u);
  EXPECT_EQ(saved["queue_times"].size(), 20u);
  EXPECT_EQ(saved["date"].get<std::string>().size(), 15u);
  for (const char* key : {"date", "latencies", "queue_times"}) saved.erase(key);
  EXPECT_EQ(s, saved);
  const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(SlurpFile(r->result_file));
  EXPECT_EQ(ordered.begin().key(), "date");
  for (const char* key : {"endpoint_type", "label", "model_id", "tokenizer_id", "max_output_tokens_per_s",
                          "max_concurrent_requests", "spec_decode_acceptance_rate", "spec_decode_num_drafts"})
    EXPECT_TRUE(s.contains(key)) << key;
  EXPECT_GT(s["spec_decode_acceptance_rate"].get<double>(), 1.0) << "in percent";
  EXPECT_LE(s["spec_decode_acceptance_rate"].get<double>(), 100.0);
  EXPECT_LE(s["max_concurrent_requests"].get<int>(), 20);
  EXPECT_GE(s["max_concurrent_requests"].get<int>(), 1);
  for (const char* key :
       {"completed", "failed", "total_input_tokens", "total_output_tokens", "duration",
        "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
        "num_prompts", "request_rate", "burstiness", "max_concurrency"})
    EXPECT_TRUE(s.contains(key)) << key;
  for (const char* metric : {"ttft", "tpot", "itl", "e2el"})
    for (const char* stat : {"mean", "median", "std", "p50", "p95", "p99"})
      EXPECT_TRUE(s.contains(std::string(stat) + "_" + metric + "_ms")) << stat << " " << metric;
  EXPECT_FALSE(s.contains("p90_ttft_ms")) << "only the percentiles asked for";
  EXPECT_EQ(s["completed"], 20);
  EXPECT_EQ(s["max_concurrency"], 4);
  EXPECT_EQ(s["request_rate"], "inf");
  EXPECT_GE(s["request_goodput"].get<double>(), 0.0);
  EXPECT_LE(s["request_goodput"].get<double>(), s["request_throughput"].get<double>());
  EXPECT_LE(s["p50_ttft_ms"].get<double>(), s["p95_ttft_ms"].get<double>());
  EXPECT_TRUE(s["metrics"]["speculative"]["per_position_acceptance_rate"].is_array());
  EXPECT_EQ(s["metrics"]["speculative"]["per_position_acceptance_rate"].size(), 5u);  // K = 5
}

TEST(VllmFlags, GoodputIsNullWithoutSlos) {
  const std::string out = testing_util::ProcessTempDir("conventions", "no_goodput", false);
  auto r = RunWith({"--workload", "chat", "--num-requests", "4", "--no-check", "--out", out});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->serving.request_goodput.has_value());
  EXPECT_TRUE(nlohmann::json::parse(SlurpFile(fs::path(out) / "summary.json"))["request_goodput"].is_null());
}

// plots/results_io.py reads the same keys: its SERVING_COLUMNS equals ServingColumns().
TEST(ServingColumns, PlotsReadTheSameKeys) {
  const std::string py = SlurpFile((testing_util::SourceRoot() / "plots" / "results_io.py").string());
  const size_t at = py.find("SERVING_COLUMNS = [");
  ASSERT_NE(at, std::string::npos) << "plots/results_io.py has no SERVING_COLUMNS list";
  const std::string list = py.substr(at, py.find(']', at) - at);
  std::vector<std::string> keys;
  const std::regex quoted("\"([a-z0-9_]+)\"");
  for (std::sregex_iterator it(list.begin(), list.end(), quoted), end; it != end; ++it)
    keys.push_back((*it)[1]);
  EXPECT_EQ(keys, ServingColumns());
}

}  // namespace
}  // namespace dspark::sim
