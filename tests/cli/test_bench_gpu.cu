// `bench` on a device (skipped without one): a tiny run writes bench.json with every key of the
// schema the plots read. Its option parsing runs without a device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/cli/cmd_bench.cuh"
#include "sim/studies/metadata_bench.cuh"
#include "tests/common/gpu_test_util.cuh"

namespace dspark::sim {
namespace {

TEST(Bench, TinyRunWritesEveryKeyOfTheSchema) {
  DS_REQUIRE_GPU();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dspark_bench_test_" + std::to_string(::getpid()));
  BenchConfig cfg;
  cfg.argv = {"bench", "--test"};
  cfg.out_dir = dir.string();
  cfg.reps = 10;
  cfg.min_samples = 10;
  cfg.warmup = 1;
  cfg.impls = {Impl::kChain, Impl::kFused, Impl::kFusedSuite};
  cfg.cases = {SeedCase::kDecode, SeedCase::kAdaptiveVerify};
  cfg.tpot_samples = 1;
  cfg.tpot_model_samples = 2;
  cfg.tpot_modes = {SpecMode::kDSpark};
  auto out = RunBench(cfg);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->bugs.empty()) << out->bugs.front();
  std::ifstream f(dir / "bench.json");
  ASSERT_TRUE(f.good());
  const nlohmann::json j = nlohmann::json::parse(f);
  for (const char* key : {"meta", "floor_us", "metadata", "tpot"}) ASSERT_TRUE(j.contains(key)) << key;
  for (const char* key : {"gpu", "driver", "clocks", "git_sha", "git_dirty", "argv", "schema_version", "date_utc"})
    EXPECT_TRUE(j["meta"].contains(key)) << "meta." << key;
  EXPECT_EQ(j["floor_us"].size(), 2u) << "floor_us is exactly {graph, eager}";
  EXPECT_TRUE(j["floor_us"]["graph"].is_number());
  EXPECT_TRUE(j["floor_us"]["eager"].is_number());
  EXPECT_GT(j["floor_us"]["graph"].get<double>(), 0.0);
  // 2 cases x 3 impls x 2 methods.
  ASSERT_EQ(j["metadata"].size(), 12u);
  const std::set<std::string> case_names = {"prefill", "chunked_prefill", "mixed", "decode", "dspark_verify",
                                            "dspark_adaptive_verify", "dspark_draft", "dspark_adaptive_draft"};
  int64_t chain_stale = 0;
  for (const nlohmann::json& e : j["metadata"]) {
    for (const char* key : {"case", "impl", "method", "gpu_us_median", "gpu_us_p10", "gpu_us_p90", "samples",
                            "stop_reason", "launches", "speedup_vs_chain", "stale_host", "padding_residue", "bug"})
      ASSERT_TRUE(e.contains(key)) << key << " in " << e.dump();
    EXPECT_TRUE(case_names.count(e["case"].get<std::string>())) << e["case"];
    EXPECT_TRUE(e["method"] == "graph" || e["method"] == "eager");
    // min_samples == reps: 10 samples, unless the time limit stopped it first (a sanitizer's
    // instrumentation makes every replay slow enough for that).
    if (e["stop_reason"] == "time") {
      EXPECT_GE(e["samples"].get<int64_t>(), 1) << e.dump();
      EXPECT_LT(e["samples"].get<int64_t>(), 10) << e.dump();
    } else {
      EXPECT_EQ(e["stop_reason"], "max_samples") << e.dump();
      EXPECT_EQ(e["samples"].get<int64_t>(), 10) << e.dump();
    }
    EXPECT_LE(e["gpu_us_p10"].get<double>(), e["gpu_us_median"].get<double>());
    EXPECT_LE(e["gpu_us_median"].get<double>(), e["gpu_us_p90"].get<double>());
    EXPECT_GT(e["launches"].get<int64_t>(), 0);
    EXPECT_EQ(e["bug"].get<int64_t>(), 0);
    // Only the host mappings of (a) and (b) read the host split (docs/states.md s.4).
    const absl::StatusOr<Impl> impl = ParseImpl(e["impl"].get<std::string>());
    ASSERT_TRUE(impl.ok()) << impl.status();
    if (*impl == Impl::kChain) EXPECT_DOUBLE_EQ(e["speedup_vs_chain"].get<double>(), 1.0);
    if (ReadsHostBoundaries(*impl)) {
      if (e["case"] == "dspark_adaptive_verify") chain_stale += e["stale_host"].get<int64_t>();
    } else {
      EXPECT_EQ(e["stale_host"].get<int64_t>(), 0) << e.dump();
    }
  }
  EXPECT_GT(chain_stale, 0) << "chain must diverge on the stale adaptive-verification boundaries";
  ASSERT_EQ(j["tpot"].size(), 3u);
  for (const nlohmann::json& e : j["tpot"]) {
    for (const char* key : {"mode", "impl", "tpot_ms", "ttft_ms", "itl_ms", "output_tok_s", "loop_tpot_ms",
                            "loop_composed_tpot_ms", "loop_minus_composed_us", "metadata_source"})
      ASSERT_TRUE(e.contains(key)) << key << " in " << e.dump();
    EXPECT_EQ(e["mode"], "dspark");
    EXPECT_GT(e["tpot_ms"].get<double>(), 0.0);
    EXPECT_GT(e["loop_tpot_ms"].get<double>(), 0.0);
    EXPECT_EQ(e["composed_samples"].get<int64_t>(), 2);
    EXPECT_EQ(e["late_captures"].get<int64_t>(), 0);
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "bench_metadata.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir / "bench_tpot.csv"));
  std::filesystem::remove_all(dir);
}

// ---- Host-only pieces (no device needed).

std::vector<char*> Argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return argv;
}

TEST(BenchArgs, DefaultsAreTheSeedsTables) {
  std::vector<std::string> args = {"bench"};
  std::vector<char*> argv = Argv(args);
  std::string help;
  auto c = ParseBenchArgs(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(help.empty());
  EXPECT_TRUE(c->cold_l2);
  EXPECT_GE(c->reps, 100);
  EXPECT_EQ(c->batch, 16);
  EXPECT_EQ(c->impls.size(), ImplsOfModel(ModelKind::kV41).size());
  EXPECT_EQ(c->cases.size(), 8u);
  EXPECT_EQ(c->tpot_modes.size(), 3u);
  EXPECT_FALSE(c->full_run);
  EXPECT_TRUE(c->Validate().ok());
}

TEST(BenchArgs, RejectsContradictionsAndBadValues) {
  const std::vector<std::vector<std::string>> bad = {
      {"bench", "--cold-l2", "--warm-l2"}, {"bench", "--impl", "triton"},  {"bench", "--cases", "decode,nope"},
      {"bench", "--tpot-modes", "fast"},   {"bench", "--host-standin", "x"}};
  for (std::vector<std::string> args : bad) {
    std::vector<char*> argv = Argv(args);
    std::string help;
    auto c = ParseBenchArgs(static_cast<int>(argv.size()), argv.data(), &help);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << args[1];
  }
  std::vector<std::string> args = {"bench", "--reps", "5", "--warm-l2", "--cases", "verify,dspark_draft",
                                   "--full-run", "--full-run-requests", "3"};
  std::vector<char*> argv = Argv(args);
  std::string help;
  auto c = ParseBenchArgs(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->cold_l2);
  EXPECT_EQ(c->cases, (std::vector<SeedCase>{SeedCase::kVerify, SeedCase::kDraft}));
  EXPECT_TRUE(c->full_run);
  EXPECT_EQ(c->full_run_requests, 3);
  EXPECT_EQ(c->Validate().code(), absl::StatusCode::kInvalidArgument) << "--reps 5 is below 10";
}

TEST(BenchCases, BothSpellingsAndAll) {
  auto all = ParseBenchCases("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 8u);
  auto two = ParseBenchCases("dspark_adaptive_verify, adaptive_verify ,decode");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(*two, (std::vector<SeedCase>{SeedCase::kAdaptiveVerify, SeedCase::kDecode}));
  EXPECT_EQ(BenchCaseName(SeedCase::kVerify), "dspark_verify");
  EXPECT_EQ(BenchCaseName(SeedCase::kAdaptiveDraft), "dspark_adaptive_draft");
  for (SeedCase c : kAllSeedCases)
    EXPECT_EQ(BenchCaseName(c), std::string(StepCaseName(static_cast<StepCase>(static_cast<int>(c)))))
        << "bench.json and the calibration use the step-case names";
  EXPECT_EQ(ParseBenchCases("verify2").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dspark::sim
