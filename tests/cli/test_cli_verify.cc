#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/suite/impl_registry.h"
#include "sim/cli/cli_registry.h"
#include "tests/common/cli_run.h"

namespace dspark {
namespace {

using ::dspark::test::RunCli;

TEST(CliVerify, StaleCasesShowStaleHostForHostReadersAndNoBugs) {
  const std::string json = ::testing::TempDir() + "/verify.json";
  ASSERT_EQ(RunCli({"verify", "--cases", "decode,adaptive_verify,draft", "--batch", "5", "--seeds", "2", "--json", json}), 0);
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  // Only the host mappings of (a) and (b) go wrong, and only where the host split is stale
  // (adaptive verification); a draft step's host layout is the device's (docs/states.md s.4).
  for (const char* impl : {"vllm-pre47474", "vllm-47474"}) {
    EXPECT_EQ(j["counts"][impl]["decode"]["stale_host"], 0) << impl;
    EXPECT_EQ(j["counts"][impl]["adaptive_verify"]["stale_host"], 2) << impl;
    EXPECT_EQ(j["counts"][impl]["draft"]["stale_host"], 0) << impl;
  }
  for (const char* impl : {"vllm-pre56562", "vllm-0.31", "vllm-0.34", "fused-suite"})
    for (const char* c : {"decode", "adaptive_verify", "draft"}) {
      EXPECT_EQ(j["counts"][impl][c]["batches"], 2) << impl << " " << c;
      EXPECT_EQ(j["counts"][impl][c]["stale_host"], 0) << impl << " " << c;
      if (std::string(impl) != "vllm-pre56562")  // (c)'s old indexer chain leaves padding residue
        EXPECT_EQ(j["counts"][impl][c]["padding_residue"], 0) << impl << " " << c;
      EXPECT_EQ(j["counts"][impl][c]["bug"], 0) << impl << " " << c;
    }
  // The seed cases at batch 16: launches and cells per kind, CPU-only.
  EXPECT_EQ(j["seed_cases"]["vllm-pre56562"]["decode"]["launches"], 77);
  EXPECT_EQ(j["seed_cases"]["vllm-0.31"]["decode"]["launches"], 17);  // vLLM 0.31.0-0.34.0's builders
  // vLLM 0.34.0 replays the recorded build of the FULL uniform-decode step: 1 graph launch of 18
  // nodes ((d)'s 17 and the second branch's token map); an adaptive verification step builds
  // eagerly (17).
  EXPECT_EQ(j["seed_cases"]["vllm-0.34"]["decode"]["launches"], 18);
  EXPECT_EQ(j["seed_cases"]["vllm-0.34"]["adaptive_verify"]["launches"], 17);
  EXPECT_EQ(j["seed_cases"]["vllm-0.34"]["decode"]["graph_launches"], 1);
  EXPECT_EQ(j["seed_cases"]["vllm-0.34"]["adaptive_verify"]["graph_launches"], 0);
  EXPECT_FALSE(j["seed_cases"]["vllm-0.31"]["decode"].contains("graph_launches"));
  EXPECT_EQ(j["seed_cases"]["fused-suite"]["decode"]["launches"], 1);
  for (const char* c : {"decode", "adaptive_verify", "draft"}) {
    EXPECT_EQ(j["seed_cases"]["vllm-pre56562"][c]["stale_host_cells"], 0) << c;
    EXPECT_EQ(j["seed_cases"]["vllm-0.31"][c]["stale_host_cells"], 0) << c;
    EXPECT_EQ(j["seed_cases"]["vllm-0.34"][c]["stale_host_cells"], 0) << c;
  }
  EXPECT_GT(j["seed_cases"]["vllm-47474"]["adaptive_verify"]["stale_host_cells"], 0);
  // (a) and (b) never shipped with adaptive verification: their adaptive results are what-ifs.
  for (const char* impl : {"vllm-pre47474", "vllm-47474"}) {
    EXPECT_TRUE(j["seed_cases"][impl]["adaptive_verify"].contains("what_if")) << impl;
    EXPECT_FALSE(j["seed_cases"][impl]["decode"].contains("what_if")) << impl;
  }
  EXPECT_FALSE(j["seed_cases"]["vllm-pre56562"]["adaptive_verify"].contains("what_if"));
  // The meta block every result file has, with the registry the plots read.
  EXPECT_EQ(j["meta"]["tool"], "dspark-sim verify");
  EXPECT_EQ(j["meta"]["seeds"], 2);
  EXPECT_EQ(j["meta"]["impls"].size(), NumImpls());
}

// --model v4: the DeepSeek-V4 states only; at batch-16 decode 0.24.0's 37 launches, 0.27.1's 31 and
// 0.29.0's 93 (docs/states.md s.9), no bug in any of them.
TEST(CliVerify, DeepSeekV4RunsItsStates) {
  const std::string json = ::testing::TempDir() + "/verify_v4.json";
  ASSERT_EQ(RunCli({"verify", "--model", "v4", "--cases", "decode,mixed", "--batch", "3", "--seeds", "1", "--json", json}),
            0);
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["meta"]["model"], "DeepSeek-V4");
  EXPECT_EQ(j["seed_cases"].size(), ImplsOfModel(ModelKind::kV4).size());
  EXPECT_EQ(j["seed_cases"]["vllm-0.24"]["decode"]["launches"], 37);
  EXPECT_EQ(j["seed_cases"]["vllm-0.27"]["decode"]["launches"], 31);
  EXPECT_EQ(j["seed_cases"]["vllm-0.29"]["decode"]["launches"], 93);
  for (const char* impl : {"vllm-0.24", "vllm-0.27", "vllm-0.29"})
    for (const char* c : {"decode", "mixed"}) EXPECT_EQ(j["counts"][impl][c]["bug"], 0) << impl << " " << c;
  // (a) and (b) never shipped with adaptive verification, nor with DeepSeek-V4.1.
  EXPECT_EQ(RunCli({"verify", "--model", "v4.1", "--impl", "vllm-0.24"}), 2);
  EXPECT_EQ(RunCli({"verify", "--model", "v4.1", "--impl", "vllm-0.27"}), 2);
  EXPECT_EQ(RunCli({"verify", "--model", "v4", "--impl", "vllm-56562"}), 2);  // a pairing no release had
  EXPECT_EQ(RunCli({"verify", "--model", "v5"}), 2);
}

TEST(CliVerify, BadOptionsAreRejectedWithExitCode2) {
  EXPECT_EQ(RunCli({"verify", "--cases", "decoding"}), 2);
  EXPECT_EQ(RunCli({"verify", "--batch", "0"}), 2);
  EXPECT_EQ(RunCli({"verify", "--impl", "fast"}), 2);
  EXPECT_EQ(RunCli({"verify", "--seeds", "0"}), 2);
}

}  // namespace
}  // namespace dspark
