// The soak (sim/studies/soak.h) at CTest size: two same-seed runs of 20,000+ steps with the invariant
// checker on every step, identical digests, RSS sampled; and `dspark-sim soak` end to end.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sim/cli/cli_registry.h"
#include "tests/common/cli_run.h"
#include "sim/studies/soak.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

SoakOptions SmallSoak() {
  SoakOptions o;
  o.steps = 20000;
  o.batch_requests = 1024;
  o.concurrency = 48;
  o.scheduler.max_num_seqs = 64;
  o.scheduler.num_kv_blocks = 700;  // tight: preemptions happen
  o.rss_sample_every = 1000;
  o.rows_check_every = 16;
  // A 20,000-step soak has no batch end inside its 2,000-step warm-up, so its peaks are not
  // comparable: the flat-RSS check is the full soak's (scripts/soak.sh).
  o.rss_limit_kib = 256 * 1024;
  return o;
}

TEST(Soak, TwoRunsAreIdenticalAndKeepTheInvariants) {
  const SoakOptions o = SmallSoak();
  auto result = RunSoak(o);
  ASSERT_TRUE(result.ok()) << result.status();
  const SoakResult& r = *result;
  for (const SoakRun& run : r.runs) {
    EXPECT_TRUE(run.invariants_ok) << run.first_violation;
    EXPECT_TRUE(run.error.empty()) << run.error;
    EXPECT_GE(run.steps, o.steps);
    EXPECT_GE(run.batches, 2);
    EXPECT_EQ(run.requests_finished, run.batches * o.batch_requests);
    EXPECT_EQ(run.kv_checks, run.steps);
    EXPECT_EQ(run.row_checks, r.runs[0].row_checks);
    EXPECT_GT(run.row_checks, run.steps / 16 - run.batches);
    EXPECT_GT(run.preemptions, 0) << "the tight KV pool never preempted";
    EXPECT_EQ(run.batch_digests.size(), static_cast<size_t>(run.batches));
  }
  EXPECT_TRUE(r.identical);
  EXPECT_EQ(r.runs[0].digest, r.runs[1].digest);
  EXPECT_EQ(r.runs[0].batch_digests, r.runs[1].batch_digests);
  EXPECT_EQ(r.runs[0].steps, r.runs[1].steps);
  EXPECT_EQ(r.runs[0].output_tokens, r.runs[1].output_tokens);
  EXPECT_EQ(r.runs[0].simulated_s, r.runs[1].simulated_s);
  EXPECT_EQ(r.first_differing_batch, -1);
  // Batches differ from one another (fresh seeds), so their digests do.
  EXPECT_NE(r.runs[0].batch_digests[0], r.runs[0].batch_digests[1]);
  // RSS was sampled through both runs.
  EXPECT_EQ(r.warmup_step, 2000);
  EXPECT_GT(r.rss_at_warmup_kib, 0);
  EXPECT_GE(r.rss_warmup_peak_kib, r.rss_at_warmup_kib);
  EXPECT_GT(r.rss_end_kib, 0);
  EXPECT_GE(r.rss.size(), static_cast<size_t>((r.runs[0].steps + r.runs[1].steps) / 1000));
  EXPECT_EQ(r.rss_growth_kib, r.rss_max_after_warmup_kib - r.rss_warmup_peak_kib);
  EXPECT_TRUE(r.ok()) << (r.failures.empty() ? "" : r.failures[0]);
}

TEST(Soak, TheDigestDependsOnTheSeed) {
  SoakOptions o = SmallSoak();
  o.steps = 3000;
  auto a = RunSoak(o);
  o.seed = 1;
  auto b = RunSoak(o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->identical && b->identical);
  EXPECT_NE(a->runs[0].digest, b->runs[0].digest);
}

TEST(Soak, ModesAndPresets) {
  for (const auto& [workload, mode] : std::vector<std::pair<std::string, SpecMode>>{
           {"speed-8k", SpecMode::kAdaptive}, {"chat", SpecMode::kDSpark}, {"chat", SpecMode::kNone}}) {
    SoakOptions o = SmallSoak();
    o.steps = 4000;
    o.workload = workload;
    o.batch_requests = workload == "speed-8k" ? 64 : 512;
    o.concurrency = 16;
    o.scheduler.mode = mode;
    o.scheduler.num_kv_blocks = 0;
    auto r = RunSoak(o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->runs[0].invariants_ok) << workload << ": " << r->runs[0].first_violation;
    EXPECT_TRUE(r->identical) << workload;
    EXPECT_GE(r->runs[0].steps, 4000) << workload;
  }
}

TEST(Soak, RejectsBadOptions) {
  SoakOptions o = SmallSoak();
  o.steps = 0;
  EXPECT_EQ(o.Validate().message(), "--steps: expected >= 1, got 0");
  o = SmallSoak();
  o.workload = "nope";
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(o.Validate().message()).find("--workload"), std::string::npos) << o.Validate();
  o = SmallSoak();
  o.rss_sample_every = 0;
  EXPECT_EQ(o.Validate().message(), "--rss-sample-every: expected >= 1, got 0");
  o = SmallSoak();
  o.scheduler.max_num_batched_tokens = 100;  // 64 sequences x 6 tokens do not fit
  EXPECT_NE(std::string(o.Validate().message()).find("--max-num-batched-tokens: expected >= max_num_seqs * (1 + K) = 64 * 6 = 384"),
            std::string::npos)
      << o.Validate();
}

TEST(Soak, ReadsVmRss) {
  auto kib = ReadVmRssKiB();
  ASSERT_TRUE(kib.ok()) << kib.status();
  EXPECT_GT(*kib, 1000);  // a process with gtest and abseil loaded holds more than 1 MiB
}

using ::dspark::test::RunCli;

TEST(SoakCli, WritesSoakJson) {
  ASSERT_EQ(cli::Registry().count("soak"), 1u);
  const std::string out = testing_util::ProcessTempDir("soak", "cli", false);
  ASSERT_EQ(RunCli({"soak", "--steps", "2500", "--batch-requests", "256", "--concurrency", "32",
                    "--rss-sample-every", "500", "--rss-limit-mib", "256", "--out", out}),
            0);
  std::ifstream in(std::filesystem::path(out) / "soak.json");
  ASSERT_TRUE(in);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_TRUE(j["determinism"]["identical"].get<bool>());
  EXPECT_EQ(j["determinism"]["digest_run1"], j["determinism"]["digest_run2"]);
  EXPECT_TRUE(j["invariants"]["ok"].get<bool>());
  EXPECT_TRUE(j["invariants"]["first_violation"].is_null());
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_GE(j["runs"][0]["steps"].get<int64_t>(), 2500);
  EXPECT_GT(j["runs"][0]["steps_per_s"].get<double>(), 0.0);
  EXPECT_EQ(j["config"]["steps"].get<int64_t>(), 2500);
  EXPECT_FALSE(j["config"]["metadata_check"].get<bool>());
  EXPECT_GT(j["rss"]["samples"].size(), 5u);
  EXPECT_EQ(j["rss"]["warmup_step"].get<int64_t>(), 250);
  EXPECT_EQ(j["meta"]["tool"], "dspark-sim soak");
}

TEST(SoakCli, BadOptionsExitTwo) {
  EXPECT_EQ(RunCli({"soak", "--steps", "0", "--out", testing_util::ProcessTempDir("soak", "bad", false)}), 2);
  EXPECT_EQ(RunCli({"soak", "--mode", "sideways"}), 2);
  EXPECT_EQ(RunCli({"soak", "--no-such-option"}), 2);
}

}  // namespace
}  // namespace dspark::sim
