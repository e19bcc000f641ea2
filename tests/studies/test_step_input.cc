// STEP.json (sim/studies/step_input.h): seed cases round-trip exactly, the defaults follow vLLM's
// slot mapping and the suite's size conventions, and every malformed field is an error naming
// the origin, the field and what was expected.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/suite/cases.h"
#include "sim/studies/step_input.h"

namespace dspark::sim {
namespace {

using json = nlohmann::json;

// 2 decodes and a 6-token prefill chunk (tests below mutate it).
json Small() {
  return json::parse(R"({"num_decodes": 2, "query_start_loc": [0, 1, 2, 8], "seq_lens": [70, 130, 6],
                         "block_table": [[1, 2], [3, 4, 5], [6]]})");
}

absl::StatusOr<StepInput> Parse(const json& j) { return ParseStepInput(j, StepInputSource{"step.json", {}}); }

TEST(StepInput, SeedCasesRoundTripExactly) {
  for (SeedCase c : kAllSeedCases)
    for (int32_t batch : {1, 3, 16})
      for (uint64_t seed : {1, 2}) {
        CaseOptions o;
        o.batch = batch;
        o.seed = seed;
        o.padding_reqs = static_cast<int32_t>(seed);
        o.bt_stride_slack = 3;
        o.unstored_token_every = seed == 2 ? 7 : 0;
        o.null_first_block_every = 3;
        o.fp8_prefill = seed == 1;
        auto made = MakeSeedCase(c, o);
        ASSERT_TRUE(made.ok()) << made.status();
        const std::string where = absl::StrCat(made->name, " seed ", seed);
        auto back = Parse(json::parse(StepInputJson(StepInput{*made, o.consts}).dump()));
        ASSERT_TRUE(back.ok()) << where << ": " << back.status();
        const CaseBatch& b = back->batch;
        EXPECT_EQ(b.qsl, made->qsl) << where;
        EXPECT_EQ(b.seq_lens, made->seq_lens) << where;
        EXPECT_EQ(b.block_table, made->block_table) << where;
        EXPECT_EQ(b.slot_mapping, made->slot_mapping) << where;
        EXPECT_EQ(b.host_qsl, made->host_qsl) << where;
        EXPECT_EQ(b.host_seq_lens, made->host_seq_lens) << where;
        EXPECT_EQ(b.fp8_prefill, made->fp8_prefill) << where;
        EXPECT_EQ(b.causal, made->causal) << where;  // the draft cases are non-causal
        const BatchSizes &x = b.sizes, &y = made->sizes;
        EXPECT_EQ(std::tie(x.num_reqs, x.num_tokens, x.num_decodes, x.num_decode_tokens, x.capacity, x.bt_width,
                           x.bt_stride),
                  std::tie(y.num_reqs, y.num_tokens, y.num_decodes, y.num_decode_tokens, y.capacity, y.bt_width,
                           y.bt_stride))
            << where;
      }
}

TEST(StepInput, DefaultsFollowVllmSlotMappingAndSuiteSizes) {
  auto in = Parse(Small());
  ASSERT_TRUE(in.ok()) << in.status();
  const CaseBatch& b = in->batch;
  // slot = block_table[r, pos // 64] * 64 + pos % 64, pos = seq_len - qlen + j.
  EXPECT_EQ(b.slot_mapping, (std::vector<int64_t>{2 * 64 + 5, 5 * 64 + 1, 6 * 64 + 0, 6 * 64 + 1, 6 * 64 + 2,
                                                  6 * 64 + 3, 6 * 64 + 4, 6 * 64 + 5}));
  EXPECT_EQ(b.block_table, (std::vector<int32_t>{1, 2, 0, 3, 4, 5, 6, 0, 0}));  // ragged rows: null page
  EXPECT_EQ(b.sizes.num_tokens, 8);
  EXPECT_EQ(b.sizes.num_decode_tokens, 2);  // a mixed step: qsl[num_decodes]
  EXPECT_EQ(b.sizes.capacity, 8);
  EXPECT_EQ(b.sizes.bt_width, 3);
  EXPECT_EQ(b.sizes.bt_stride, 3);
  EXPECT_EQ(b.host_qsl, b.qsl);
  EXPECT_EQ(b.host_seq_lens, b.seq_lens);
  EXPECT_TRUE(b.fp8_prefill);
  EXPECT_EQ(in->consts.spec_k, 5);

  // Decode-only with graph padding: the padding tokens are decode tokens, slot -1.
  json d = json::parse(R"({"num_decodes": 2, "num_tokens": 4, "query_start_loc": [0, 1, 2],
                          "seq_lens": [3, 9], "block_table": [[7], [8]]})");
  auto dec = Parse(d);
  ASSERT_TRUE(dec.ok()) << dec.status();
  EXPECT_EQ(dec->batch.sizes.num_decode_tokens, 4);
  EXPECT_EQ(dec->batch.slot_mapping, (std::vector<int64_t>{7 * 64 + 2, 8 * 64 + 8, -1, -1}));
}

struct BadCase {
  const char* name;
  const char* patch;     // JSON merge patch applied to Small()
  const char* message;   // expected in the error
};

class StepInputBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(StepInputBad, IsAnErrorNamingTheFieldAndWhatWasExpected) {
  json j = Small();
  j.merge_patch(json::parse(GetParam().patch));
  auto in = Parse(j);
  ASSERT_FALSE(in.ok()) << GetParam().patch;
  EXPECT_TRUE(absl::IsInvalidArgument(in.status()) || absl::IsOutOfRange(in.status())) << in.status();
  EXPECT_NE(in.status().message().find(GetParam().message), std::string::npos)
      << "got: " << in.status().message() << "\nwant: " << GetParam().message;
  EXPECT_EQ(in.status().message().rfind("step.json", 0), 0u) << in.status().message();
}

const BadCase kBadCases[] = {
    {"MissingSeqLens", R"({"seq_lens": null})", "field 'seq_lens': missing (required)"},
    {"MissingNumDecodes", R"({"num_decodes": null})", "field 'num_decodes': missing (required)"},
    {"MissingBlockTable", R"({"block_table": null})", "field 'block_table': missing (required)"},
    {"QslLength", R"({"query_start_loc": [0, 1, 2]})", "field 'query_start_loc': expected 4 entries (R + 1, with R = 3"},
    {"QslStart", R"({"query_start_loc": [1, 1, 2, 8]})", "field 'query_start_loc'[0]: expected 0, got 1"},
    {"QslDecreases", R"({"query_start_loc": [0, 2, 1, 8]})", "expected non-decreasing values, got 2 then 1 at index 2"},
    {"SeqLenBelowQuery", R"({"seq_lens": [70, 130, 5]})", "field 'seq_lens'[2]: expected at least the query length 6"},
    {"SeqLenNegative", R"({"seq_lens": [70, -1, 6]})", "field 'seq_lens'[1]: expected an integer in [0, 16777216], got -1"},
    {"SeqLenFloat", R"({"seq_lens": [70, 1.5, 6]})", "field 'seq_lens'[1]: expected an integer"},
    {"SeqLenString", R"({"seq_lens": "70,130,6"})", "field 'seq_lens': expected an array of integers, got \"70,130,6\""},
    {"SeqLenHuge", R"({"seq_lens": [70, 1e30, 6]})", "field 'seq_lens'[1]: expected an integer"},
    {"BlockTableRows", R"({"block_table": [[1, 2], [3, 4, 5]]})", "field 'block_table': expected an array of R = 3 rows"},
    {"BlockTableRowNotArray", R"({"block_table": [[1, 2], 3, [6]]})", "expected row 1 to be an array of block ids"},
    {"BlockTableTooNarrow", R"({"seq_lens": [70, 200, 6]})", "field 'seq_lens'[1] = 200 needs 4 block-table columns"},
    {"BlockIdNegative", R"({"block_table": [[1, -2], [3, 4, 5], [6]]})", "field 'block_table'[0][1]: expected a block id in [0, 33554431]"},
    {"BlockIdOverflowsSlot", R"({"block_table": [[1, 40000000], [3, 4, 5], [6]]})", "expected a block id in [0, 33554431], got 40000000"},
    {"BtStrideBelowRows", R"({"bt_stride": 2})", "field 'bt_stride': expected an integer in [3,"},
    {"NumDecodesPastR", R"({"num_decodes": 4})", "field 'num_decodes': expected an integer in [0, 3], got 4"},
    {"NumTokensBelowTotal", R"({"num_tokens": 7})", "field 'num_tokens': expected an integer in [8,"},
    {"NumDecodeTokensBelowDecodes", R"({"num_decode_tokens": 1})", "field 'num_decode_tokens': expected an integer in [2, 8], got 1"},
    {"CapacityBelowTokens", R"({"capacity": 7})", "field 'capacity': expected an integer in [8,"},
    {"SlotMappingLength", R"({"slot_mapping": [1, 2, 3]})", "field 'slot_mapping': expected num_tokens = 8 entries, got 3"},
    {"SlotBelowMinusOne", R"({"slot_mapping": [1, 2, 3, 4, 5, 6, 7, -2]})", "field 'slot_mapping'[7]: expected an integer in [-1,"},
    {"HostNotObject", R"({"host": [0, 1]})", "field 'host': expected an object with query_start_loc and seq_lens"},
    {"HostUnknownField", R"({"host": {"qsl": [0, 1, 2, 8]}})", "unknown field 'host.qsl'; expected query_start_loc, seq_lens"},
    {"HostQslLength", R"({"host": {"query_start_loc": [0, 8]}})", "field 'host.query_start_loc': expected 4 entries"},
    {"HostTotalPastN", R"({"host": {"query_start_loc": [0, 1, 2, 9], "seq_lens": [70, 130, 7]}})", "host token total 9 exceeds num_tokens = 8"},
    {"HostSeqBelowQuery", R"({"host": {"seq_lens": [70, 130, 5]}})", "field 'host.seq_lens'[2]: expected at least the query length 6"},
    {"HostDecodeTotalPastNd", R"({"host": {"query_start_loc": [0, 2, 3, 8], "seq_lens": [71, 131, 5]}})", "host decode token total 3 exceeds num_decode_tokens = 2"},
    {"HostSeqLensLength", R"({"host": {"seq_lens": [70, 130]}})", "field 'host.seq_lens': expected R = 3 entries, got 2"},
    {"UnknownField", R"({"seqlens": [1]})", "unknown field 'seqlens'; expected one of schema, schema_version, name"},
    {"Fp8NotBool", R"({"fp8_prefill": "yes"})", "field 'fp8_prefill': expected true (FP8 prefill) or false (BF16), got \"yes\""},
    {"SchemaVersion", R"({"schema_version": 2})", "field 'schema_version': expected 1, got 2"},
    {"Schema", R"({"schema": "dspark-step-dump"})", "field 'schema': expected \"dspark-step\""},
    {"SpecK", R"({"spec_k": 0})", "field 'spec_k': expected an integer in [1, 8], got 0"},
    {"NameNotString", R"({"name": 3})", "field 'name': expected a string, got 3"},
};

INSTANTIATE_TEST_SUITE_P(Fields, StepInputBad, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(StepInput, StaleHostSplitIsAccepted) {
  // A host split that gives request 0 two tokens and request 1 none: host seq_lens must follow.
  json j = Small();
  j["host"] = json::parse(R"({"query_start_loc": [0, 2, 2, 8], "seq_lens": [71, 129, 6]})");
  auto in = Parse(j);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_TRUE(in->batch.HostStale());
}

TEST(StepInput, FieldsFromOptionsAreNamedByTheirOption) {
  json j = Small();
  j["seq_lens"] = {70, 130, 5};
  auto in = ParseStepInput(j, StepInputSource{"options", {"seq_lens"}});
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().message().rfind("--seq-lens[2]: expected at least the query length 6", 0), 0u)
      << in.status().message();
  EXPECT_EQ(StepFieldOption("query_start_loc"), "--qsl");
  EXPECT_EQ(StepFieldOption("host.query_start_loc"), "--host-qsl");
  EXPECT_EQ(StepFieldOption("host.seq_lens"), "--host-seq-lens");
  EXPECT_EQ(StepFieldOption("num_decode_tokens"), "--num-decode-tokens");
  EXPECT_EQ(StepFieldOption("fp8_prefill"), "--prefill-dtype");
}

TEST(StepInput, ReadStepFileNamesTheFileLineAndColumn) {
  const std::filesystem::path dir = ::testing::TempDir();
  const std::string bad = (dir / "bad_step.json").string();
  std::ofstream(bad) << "{\n  \"seq_lens\": [1, 2,],\n}\n";
  auto r = ReadStepFile(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
  EXPECT_EQ(r.status().message().rfind(bad + ":2:", 0), 0u) << r.status().message();

  const std::string array = (dir / "array_step.json").string();
  std::ofstream(array) << "[1, 2]\n";
  r = ReadStepFile(array);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expected a JSON object"), std::string::npos) << r.status().message();

  r = ReadStepFile((dir / "no_such_step.json").string());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  r = ReadStepFile(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("directory"), std::string::npos) << r.status().message();
}

TEST(StepInput, EmptyStepIsValid) {
  auto in = Parse(json::parse(R"({"num_decodes": 0, "query_start_loc": [0], "seq_lens": [], "block_table": []})"));
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->batch.sizes.num_reqs, 0);
  EXPECT_EQ(in->batch.sizes.num_tokens, 0);
}

}  // namespace
}  // namespace dspark::sim
