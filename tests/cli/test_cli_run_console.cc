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

std::string RunConsole(std::vector<std::string> args, const std::string& name) {
  const std::string out = testing_util::ProcessTempDir("run_console", name, false);
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
  EXPECT_NE(text.find("  metadata check: " + std::to_string(NumImpls()) +
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

}  // namespace
}  // namespace dspark
