// `run`'s console: the metadata check's outcome, and one line per caveat that applies.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kernels/suite/impl_registry.h"
#include "sim/cli/cli_registry.h"
#include "tests/common/temp_folders.h"

namespace dspark {
namespace {

std::string RunConsole(std::vector<std::string> args, const std::string& name, std::string* out_dir = nullptr) {
  const std::string out = testing_util::ProcessTempDir("run_console", name, false);
  if (out_dir != nullptr) *out_dir = out;
  args.insert(args.begin(), "run");
  for (const char* a : {"--progress", "none", "--out"}) args.emplace_back(a);
  args.push_back(out);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  const int rc = cli::Registry().at("run").fn(static_cast<int>(argv.size()), argv.data());
  std::fflush(stdout);
  const std::string text = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0) << text;
  return text;
}

TEST(RunConsole, SaysTheCheckOutcomeAndTheCaveatsOfABurstWithTheAutoPool) {
  const std::string text = RunConsole({"--workload", "chat", "--num-requests", "6", "--concurrency", "3", "--max-num-seqs", "4",
                                       "--max-model-len", "1536", "--max-num-batched-tokens", "1024"},
                                      "burst");
  EXPECT_NE(text.find("  metadata check: " + std::to_string(ImplsOfModel(ModelKind::kV41).size()) +
                      " implementations compared exactly with the reference: stale_host "),
            std::string::npos) << text;
  EXPECT_NE(text.find(" bug 0 steps\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  caveat: arrivals: all at t=0"), std::string::npos) << text;
  EXPECT_NE(text.find("  caveat: acceptance: a synthetic model (preset default"), std::string::npos) << text;
  EXPECT_NE(text.find("  caveat: KV pool: "), std::string::npos) << text;
  EXPECT_EQ(text.find("  caveat: overloaded"), std::string::npos) << text;
}

TEST(RunConsole, NoCaveatThatDoesNotApplyAndOverloadIsSaid) {
  // Spread arrivals, a pool that can run out, no drafts: only the overload remains (40 requests
  // offered at 1000/s are far more than one instance serves).
  const std::string text =
      RunConsole({"--workload", "chat", "--num-requests", "40", "--request-rate", "1000", "--mode", "none",
                  "--max-model-len", "1536", "--max-num-seqs", "8", "--num-kv-blocks", "60", "--no-check"},
                 "spread");
  EXPECT_NE(text.find("  metadata check: off (--no-check)"), std::string::npos) << text;
  EXPECT_EQ(text.find("caveat: arrivals"), std::string::npos) << text;
  EXPECT_EQ(text.find("caveat: acceptance"), std::string::npos) << text;
  EXPECT_EQ(text.find("caveat: KV pool"), std::string::npos) << text;
  EXPECT_NE(text.find("  caveat: overloaded: "), std::string::npos) << text;
}

// --kv-gb: the pool is as many blocks as the size holds at the model's bytes per token, at most
// what max-num-seqs full-length requests use; the auto pool's caveat says its size in GB.
TEST(RunConsole, AKvPoolInGbIsTurnedIntoBlocks) {
  const std::vector<std::string> base = {"--workload", "chat", "--num-requests", "6", "--max-num-seqs", "8",
                                         "--max-model-len", "1536", "--mode", "none", "--no-check"};
  std::vector<std::string> small = base;
  small.insert(small.end(), {"--kv-gb", "0.02"});  // 0.02e9 / (64 * 4132) = 75.6
  std::string out;
  const std::string text = RunConsole(small, "kv_gb_small", &out);
  EXPECT_EQ(text.find("caveat: KV pool"), std::string::npos) << "75 blocks cannot hold 8 full requests\n" << text;
  const std::string summary = testing_util::SlurpFile(out + "/summary.json");
  EXPECT_NE(summary.find("\"kv_blocks\": 75"), std::string::npos) << summary;
  std::vector<std::string> large = base;
  large.insert(large.end(), {"--kv-gb", "80"});
  const std::string capped = RunConsole(large, "kv_gb_large");
  // 8 requests of 24 blocks and the null block: 193 blocks of 64 tokens at 4,132 B, 0.05 GB.
  EXPECT_NE(capped.find("  caveat: KV pool: 193 blocks (0.051 GB at 4132 B per token) hold max-num-seqs (8)"),
            std::string::npos)
      << capped;
}

// A trace that gives lengths only (or one timestamp for every row) is a burst at t=0, as a
// preset without --request-rate is; the console says so. Concurrency 0 is "no limit" (null in
// summary.json's max_concurrency), never printed as 0.
TEST(RunConsole, ALengthOnlyTraceIsSaidToArriveAtOnce) {
  const std::string dir = testing_util::ProcessTempDir("run_console", "length_only_traces", true);
  testing_util::WriteTextFile(dir + "/lengths.jsonl",
                              "{\"prompt_len\": 10, \"output_len\": 4}\n{\"prompt_len\": 12, \"output_len\": 3}\n");
  testing_util::WriteTextFile(dir + "/same.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n2.5,10,4\n2.5,12,3\n");
  testing_util::WriteTextFile(dir + "/timed.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,4\n0.5,12,3\n");
  for (const char* name : {"lengths.jsonl", "same.csv"}) {
    const std::string text = RunConsole({"--trace", dir + "/" + name, "--mode", "none", "--no-check"}, name);
    EXPECT_NE(text.find("  caveat: arrivals: every request of the trace arrives at t=0"), std::string::npos)
        << name << "\n" << text;
    EXPECT_NE(text.find("  concurrency no limit  "), std::string::npos) << text;
  }
  const std::string timed = RunConsole({"--trace", dir + "/timed.csv", "--mode", "none", "--no-check",
                                        "--concurrency", "1"}, "timed");
  EXPECT_EQ(timed.find("caveat: arrivals"), std::string::npos) << timed;
  EXPECT_NE(timed.find("  concurrency 1  "), std::string::npos) << timed;
}

}  // namespace
}  // namespace dspark
