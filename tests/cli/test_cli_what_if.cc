// `run --what-if record-av-graphs`: the labelled what-if's report is deterministic, names the
// release and the pairing, and is absent without the option. `run --what-if-57207`: the released
// states build #57207's segmentation too, exactly, at its launches, and the run says so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cli/cli_registry.h"
#include "tests/common/cli_run.h"

namespace dspark {
namespace {

using json = nlohmann::json;

using ::dspark::test::RunCli;

json Summary(const std::string& out) {
  std::ifstream f(std::filesystem::path(out) / "summary.json");
  return json::parse(f);
}

std::vector<std::string> Args(const std::string& out, const std::string& what_if) {
  std::vector<std::string> a = {"run", "--workload", "chat", "--num-requests", "40", "--request-rate", "30",
                                "--max-num-seqs", "16", "--max-num-batched-tokens", "4096", "--impl",
                                "vllm-47474,vllm-0.31,vllm-0.34,fused-suite", "--progress", "none", "--out", out};
  if (!what_if.empty()) {
    a.push_back("--what-if");
    a.push_back(what_if);
  }
  return a;
}

TEST(CliWhatIf, RecordAvGraphsReportIsDeterministicAndLabelled) {
  const std::string out = (std::filesystem::path(::testing::TempDir()) / "what_if_av").string();
  ASSERT_EQ(RunCli(Args(out, "record-av-graphs")), 0);
  const json first = Summary(out)["what_if_record_av_graphs"];
  ASSERT_TRUE(first.is_object()) << Summary(out).dump(1).substr(0, 2000);
  ASSERT_EQ(RunCli(Args(out, "record-av-graphs")), 0);
  EXPECT_EQ(Summary(out)["what_if_record_av_graphs"], first) << "the report differs between identical runs";
  EXPECT_EQ(first["what_if"], "record-av-graphs");
  EXPECT_NE(first["label"].get<std::string>().find("what-if"), std::string::npos);
  EXPECT_GT(first["adaptive_steps"].get<int64_t>(), 0);
  EXPECT_GT(first["keyed_steps"].get<int64_t>(), 0);
  EXPECT_EQ(first["impls"]["vllm-0.34"]["vllm_release"], "0.34.0");
  EXPECT_EQ(first["impls"]["vllm-0.31"]["vllm_release"], "0.31.0-0.33.0");
  // 0.34.0 takes next_n under adaptive verification: never unsafe, frozen or not.
  EXPECT_EQ(first["impls"]["vllm-0.34"]["host_values_as_released"]["indexer.decode_is_uniform"]["unsafe"], 0);
  EXPECT_EQ(first["impls"]["vllm-0.34"]["host_values_frozen"]["indexer.write_max_decode_len"]["unsafe"], 0);
  // The project's own reads no host value: its outputs never break.
  EXPECT_EQ(first["impls"]["fused-suite"]["broken_steps"], 0);
  // Without the option, no section.
  ASSERT_EQ(RunCli(Args(out, "")), 0);
  EXPECT_FALSE(Summary(out).contains("what_if_record_av_graphs"));
  EXPECT_EQ(RunCli(Args(out, "record-everything")), 2);
}

double Launches(const json& s, const std::string& impl, const std::string& step_case) {
  return s["metadata_check"]["impls"][impl]["cases"][step_case]["launches_per_step"].get<double>();
}

TEST(CliWhatIf, Segmentation57207IsLabelledExactAndAddsItsLaunches) {
  const std::string out = (std::filesystem::path(::testing::TempDir()) / "what_if_57207").string();
  std::vector<std::string> args = Args(out, "");
  ASSERT_EQ(RunCli(args), 0);
  const json released = Summary(out);
  EXPECT_FALSE(released["config"].contains("what_if_57207"));
  args.push_back("--what-if-57207");
  ASSERT_EQ(RunCli(args), 0);
  const json what_if = Summary(out);
  EXPECT_NE(what_if["config"]["what_if_57207"].get<std::string>().find("what-if"), std::string::npos);
  for (const char* impl : {"vllm-47474", "vllm-0.31", "vllm-0.34", "fused-suite"}) {
    EXPECT_EQ(what_if["metadata_check"]["impls"][impl]["bug"], 0) << impl;
    // The host-planned segmentation is 10 ops on a step with prefills, none on a decode step;
    // fused-suite builds it in its one launch either way.
    const double added = std::string(impl) == "fused-suite" ? 0.0 : 10.0;
    EXPECT_EQ(Launches(what_if, impl, "mixed"), Launches(released, impl, "mixed") + added) << impl;
    EXPECT_EQ(Launches(what_if, impl, "dspark_adaptive_draft"), Launches(released, impl, "dspark_adaptive_draft"))
        << impl;
  }
}

}  // namespace
}  // namespace dspark
