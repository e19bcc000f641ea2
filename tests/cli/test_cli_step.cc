// `dspark-sim step`: the bundled example through every implementation, the same step given as
// a file, as options and as an emitted seed case, and bad input with exit code 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/suite/impl_registry.h"
#include "sim/cli/cli_registry.h"
#include "tests/common/cli_run.h"
#include "tests/common/test_paths.h"

namespace dspark {
namespace {

using json = nlohmann::json;

using ::dspark::test::RunCli;

json ReadJson(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

std::string Temp(const std::string& name) { return (std::filesystem::path(::testing::TempDir()) / name).string(); }

std::string Example() {
  return (testing_util::SourceRoot() / "workloads" / "examples" / "step_adaptive_verify.json").string();
}

TEST(CliStep, ExampleShowsStaleHostOnlyForHostReadersAndOutputsEqualTheReferenceElsewhere) {
  const std::string out = Temp("step_example.json");
  ASSERT_EQ(RunCli({"step", "--json", Example(), "--out", out}), 0);
  const json r = ReadJson(out);
  EXPECT_EQ(r["meta"]["schema"], "dspark-step-result");
  EXPECT_TRUE(r["host_view_stale"].get<bool>());
  ASSERT_TRUE(r["impls"].contains("vllm-0.31"));
  ASSERT_TRUE(r["impls"].contains("vllm-0.34"));
  ASSERT_EQ(r["impls"].size(), ImplsOfModel(ModelKind::kV41).size());
  for (const auto& [name, e] : r["impls"].items()) {
    ASSERT_FALSE(e.contains("error")) << name << ": " << e["error"];
    const bool host_reader = e["traits"]["reads_host_boundaries"].get<bool>();
    EXPECT_EQ(e["differing_fields"]["bug"], 0) << name;
    if (host_reader) {
      EXPECT_GT(e["differing_fields"]["stale_host"].get<int64_t>(), 0) << name;
      for (const json& d : e["differences"]) EXPECT_EQ(d["kind"], "stale-host") << name << " " << d.dump();
    } else if (e["differences"].empty()) {
      // Every field of the report lines up with the reference's, cell by cell. Ratio 2's
      // seq_out is compared as seq // 2 over [0, N_d) (CompareSuite), so it is left out here;
      // MLA ratio 1's slots are vLLM's slot_mapping, written by no builder.
      for (const auto& [field, want] : r["reference"].items()) {
        if (field == "indexer_r2.seq_out" || field == "mla_r1.compressed_slots") continue;
        // An implementation that does not write the prefill metadata does not list it.
        if (!e["traits"]["writes_prefill_metadata"].get<bool>() && !e["outputs"].contains(field)) continue;
        // Nor does one without #57207's segmentation list the segments.
        if (!e["traits"]["builds_prefill_segments"].get<bool>() && field.rfind("prefill_segments.", 0) == 0) {
          EXPECT_FALSE(e["outputs"].contains(field)) << name << " " << field;
          continue;
        }
        ASSERT_TRUE(e["outputs"].contains(field)) << name << " " << field;
        EXPECT_EQ(e["outputs"][field]["shape"], want["shape"]) << name << " " << field;
        EXPECT_EQ(e["outputs"][field]["values"], want["values"]) << name << " " << field;
      }
    }
  }
  // The host mappings' token map follows the host split: request 0 gets 3 tokens, not 2.
  const json& stale = r["impls"]["vllm-pre47474"]["outputs"]["token_map.token_to_req"]["values"];
  EXPECT_EQ(stale[2], 0);
  EXPECT_EQ(r["reference"]["token_map.token_to_req"]["values"][2], 1);
}

TEST(CliStep, OptionsFileAndEmittedCaseGiveTheSameReport) {
  const std::string from_options = Temp("step_options.json"), from_file = Temp("step_file.json");
  ASSERT_EQ(RunCli({"step", "--qsl", "0,2,5,6,14", "--seq-lens", "200,90,70,500", "--num-decodes", "3",
                    "--num-tokens", "16", "--block-table", "11,12,13,14;21,22;31,32;41,42,43,44,45,46,47,48",
                    "--host-qsl", "0,3,4,6,14", "--host-seq-lens", "201,88,70,500", "--out", from_options}),
            0);
  ASSERT_EQ(RunCli({"step", "--json", Example(), "--out", from_file}), 0);
  const json a = ReadJson(from_options), b = ReadJson(from_file);
  EXPECT_EQ(a["reference"], b["reference"]);
  EXPECT_EQ(a["impls"], b["impls"]);

  // A seed case, emitted as STEP.json and read back: the same report.
  const std::string emitted = Temp("step_case.json"), from_case = Temp("step_case_report.json"),
                    from_emitted = Temp("step_emitted_report.json");
  ASSERT_EQ(RunCli({"step", "--case", "adaptive_draft", "--batch", "5", "--seed", "3", "--emit-step", emitted,
                    "--out", from_case}),
            0);
  ASSERT_EQ(RunCli({"step", "--json", emitted, "--out", from_emitted}), 0);
  const json c = ReadJson(from_case), d = ReadJson(from_emitted);
  EXPECT_EQ(c["reference"], d["reference"]);
  EXPECT_EQ(c["impls"], d["impls"]);
  EXPECT_EQ(c["step"]["query_start_loc"], d["step"]["query_start_loc"]);

  // Options change a file's fields: a fresh host view leaves no stale-host difference.
  const std::string fresh = Temp("step_fresh.json");
  ASSERT_EQ(RunCli({"step", "--json", Example(), "--host-qsl", "0,2,5,6,14", "--host-seq-lens", "200,90,70,500",
                    "--impl", "vllm-pre47474", "--out", fresh}),
            0);
  const json f = ReadJson(fresh);
  EXPECT_FALSE(f["host_view_stale"].get<bool>());
  EXPECT_EQ(f["impls"].size(), 1u);
  EXPECT_TRUE(f["impls"]["vllm-pre47474"]["differences"].empty());
}

TEST(CliStep, EmptyAndOneTokenStepsRunEveryImplementation) {
  for (const char* step : {R"({"num_decodes": 0, "query_start_loc": [0], "seq_lens": [], "block_table": []})",
                           R"({"num_decodes": 1, "query_start_loc": [0, 1], "seq_lens": [1], "block_table": [[0]],
                               "fp8_prefill": false})"}) {
    const std::string in = Temp("step_small.json"), out = Temp("step_small_report.json");
    std::ofstream(in) << step;
    ASSERT_EQ(RunCli({"step", "--json", in, "--out", out}), 0) << step;
    const json r = ReadJson(out);
    for (const auto& [name, e] : r["impls"].items()) {
      EXPECT_FALSE(e.contains("error")) << name << ": " << e.value("error", "");
      EXPECT_TRUE(e["differences"].empty()) << name << " " << e["differences"].dump();
    }
  }
}

TEST(CliStep, BadInputExitsWith2) {
  const std::string bad = Temp("step_bad.json");
  std::ofstream(bad) << "{\"seq_lens\": [1,\n";
  EXPECT_EQ(RunCli({"step", "--json", bad}), 2);
  EXPECT_EQ(RunCli({"step", "--json", Temp("no_such_step.json")}), 2);
  EXPECT_EQ(RunCli({"step"}), 2);  // no step given
  EXPECT_EQ(RunCli({"step", "--json", Example(), "--case", "decode"}), 2);
  EXPECT_EQ(RunCli({"step", "--case", "decoding"}), 2);
  EXPECT_EQ(RunCli({"step", "--case", "decode", "--batch", "0"}), 2);
  EXPECT_EQ(RunCli({"step", "--qsl", "0,1,x", "--seq-lens", "1,1", "--block-table", "1;2", "--num-decodes", "2"}), 2);
  EXPECT_EQ(RunCli({"step", "--json", Example(), "--prefill-dtype", "fp16"}), 2);
  EXPECT_EQ(RunCli({"step", "--json", Example(), "--impl", "fast"}), 2);
  EXPECT_EQ(RunCli({"step", "--json", Example(), "--seq-lens", "1,1,1,1"}), 2);  // below the query lengths
  EXPECT_EQ(RunCli({"step", "--json", Example(), "--no-such-option"}), 2);
  EXPECT_EQ(RunCli({"step", "--help"}), 0);
}

}  // namespace
}  // namespace dspark
