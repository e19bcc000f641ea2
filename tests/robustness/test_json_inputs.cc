// JSON inputs other than traces (STEP.json; the calibration is in the bad-input table): a value
// of the wrong type or out of range is named by file, line and field, with what was expected
// and what was found.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/common/cli_run.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ::dspark::testing_util::ProcessTempDir;
using ::dspark::testing_util::WriteTextFile;

struct Outcome {
  int code = 0;
  std::string err;
};

Outcome Step(const std::string& name, const std::string& text) {
  const fs::path dir = ProcessTempDir("json_inputs", name, /*create=*/true);
  WriteTextFile(dir / "STEP.json", text);
  Outcome o;
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  o.code = test::RunCli({"step", "--json", (dir / "STEP.json").string(), "--out", (dir / "report.json").string()});
  ::testing::internal::GetCapturedStdout();
  o.err = ::testing::internal::GetCapturedStderr();
  const std::string path = (dir / "STEP.json").string();
  for (size_t at; (at = o.err.find(path)) != std::string::npos;) o.err.replace(at, path.size(), "<file>");
  return o;
}

constexpr const char* kGood =
    "{\n"
    "  \"query_start_loc\": [0, 1, 2],\n"
    "  \"seq_lens\": [5, 9],\n"
    "  \"block_table\": [[1], [2]],\n"
    "  \"num_decodes\": 2\n"
    "}\n";

TEST(StepJson, TheWellFormedStepRuns) { EXPECT_EQ(Step("good", kGood).code, 0); }

TEST(StepJson, AStringWhereAnArrayOfIntegersGoesNamesTheLine) {
  const Outcome o = Step("seq_lens_string",
                         "{\n  \"query_start_loc\": [0, 1, 2],\n  \"seq_lens\": \"5,9\",\n"
                         "  \"block_table\": [[1], [2]],\n  \"num_decodes\": 2\n}\n");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "dspark-sim step: <file>:3: field 'seq_lens': expected an array of integers, got \"5,9\"\n")
      << o.err;
}

TEST(StepJson, AFloatCountAndAnIntegerBeyond32BitsNameTheLine) {
  Outcome o = Step("num_decodes_float",
                   "{\n  \"query_start_loc\": [0, 1, 2],\n  \"seq_lens\": [5, 9],\n"
                   "  \"block_table\": [[1], [2]],\n  \"num_decodes\": 2.0\n}\n");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "dspark-sim step: <file>:5: field 'num_decodes': expected an integer in [0, 2], got 2.0\n") << o.err;
  o = Step("seq_len_beyond_32_bits",
           "{\n  \"query_start_loc\": [0, 1, 2],\n  \"seq_lens\": [5, 4294967305],\n"
           "  \"block_table\": [[1], [2]],\n  \"num_decodes\": 2\n}\n");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err,
            "dspark-sim step: <file>:3: field 'seq_lens'[1]: expected an integer in [0, 16777216], got 4294967305\n")
      << o.err;
}

TEST(StepJson, AnUnknownFieldAndADuplicateKeyNameTheLine) {
  Outcome o = Step("unknown", "{\n  \"seq_len\": [5]\n}\n");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("<file>:2: unknown field 'seq_len'"), std::string::npos) << o.err;
  o = Step("duplicate", "{\"seq_lens\": [5],\n \"seq_lens\": [7]}\n");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "dspark-sim step: <file>:2: seq_lens: expected each key once per object, got it twice\n") << o.err;
}

}  // namespace
}  // namespace dspark::sim
