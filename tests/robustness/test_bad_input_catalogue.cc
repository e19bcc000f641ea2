// The bad-input catalogue: every malformed trace, impossible config and awkward file
// tried, each with the exact outcome: the error message (file, line, column, field, what was
// expected) or, for inputs that must be accepted (CRLF, BOM, no final newline, ...), the
// requests they parse to. This file runs the cases (tests/robustness/bad_input_cases_*.cc) and
// renders docs/bad-input.md's table from them; DocTableMatchesTheCases keeps the two equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "sim/cli/cmd_run.h"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "sim/studies/config.h"
#include "sim/workload/trace.h"
#include "tests/robustness/bad_input_catalogue.h"
#include "tests/common/temp_folders.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

using namespace catalogue;  // NOLINT: the case builders

std::vector<Case> Cases() {
  std::vector<Case> v = TraceCases();
  for (Case& c : RunCases()) v.push_back(std::move(c));
  for (Case& c : InputCases()) v.push_back(std::move(c));
  return v;
}

// ---- running one case

using testing_util::SlurpFile;

// Writes `text` into a fresh temp folder (unless the case wants the file absent); the path
// stands for "<file>" in messages.
std::string WriteTemp(const Case& c, const std::string& text, const std::string& suffix) {
  const std::string path =
      testing_util::ProcessTempDir("catalogue", c.name + suffix, true) + "/input";
  if (c.prepare)
    c.prepare(path);
  else if (!c.absent)
    std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string Placeholder(const std::string& message, const std::string& path) {
  return absl::StrReplaceAll(message, {{path, "<file>"}});
}

std::vector<char*> Argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return argv;
}

absl::StatusOr<RunConfig> ParseAndValidate(std::vector<std::string> args,
                                           const std::function<void(RunConfig*)>& edit) {
  args.insert(args.begin(), "run");
  std::vector<char*> argv = Argv(args);
  std::string help;
  absl::StatusOr<RunConfig> config = ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
  if (!config.ok()) return config;
  if (edit) edit(&*config);
  if (absl::Status s = config->Validate(); !s.ok()) return s;
  return config;
}

std::vector<std::string> WithPath(std::vector<std::string> args, const std::string& path) {
  for (auto& a : args)
    if (a == "<file>") a = path;
  return args;
}

void ExpectRequests(const std::vector<RequestSpec>& got, const std::vector<RequestSpec>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "request " << i);
    EXPECT_EQ(got[i].id, want[i].id);
    EXPECT_EQ(got[i].arrival_s, want[i].arrival_s);  // every arrival here is exact in binary
    EXPECT_EQ(got[i].prompt_len, want[i].prompt_len);
    EXPECT_EQ(got[i].output_len, want[i].output_len);
    EXPECT_EQ(got[i].acceptance, want[i].acceptance);
  }
}

class BadInputCatalogue : public ::testing::TestWithParam<Case> {};

TEST_P(BadInputCatalogue, GetsExactlyItsOutcome) {
  const Case& c = GetParam();
  switch (c.kind) {
    case Kind::kTrace: {
      const std::string path = WriteTemp(c, c.text, "");
      const absl::StatusOr<Trace> trace = LoadTrace(path, c.options);
      if (c.accepted.empty()) {
        ASSERT_FALSE(trace.ok()) << "accepted, but expected: " << c.error;
        EXPECT_EQ(trace.status().code(), absl::StatusCode::kInvalidArgument);
        EXPECT_EQ(Placeholder(std::string(trace.status().message()), path), c.error);
        return;
      }
      ASSERT_TRUE(trace.ok()) << trace.status();
      ExpectRequests(trace->requests, c.requests);
      EXPECT_EQ(trace->skipped_rows, c.skipped);
      EXPECT_EQ(trace->failed_requests, c.failed);
      EXPECT_EQ(trace->data_rows,
                static_cast<int64_t>(c.requests.size()) + c.skipped + c.failed);
      if (c.skipped > 0) {
        ASSERT_FALSE(trace->skipped_examples.empty());
        EXPECT_EQ(Placeholder(trace->skipped_examples[0], path), c.error);
      }
      return;
    }
    case Kind::kRunArgs: {
      const absl::StatusOr<RunConfig> config = ParseAndValidate(c.args, c.edit);
      ASSERT_FALSE(config.ok()) << "accepted, but expected: " << c.error;
      EXPECT_EQ(std::string(config.status().message()), c.error);
      return;
    }
    case Kind::kConfigFile: {
      const std::string path = WriteTemp(c, c.text, "");
      const absl::StatusOr<RunConfig> config = ParseAndValidate(WithPath(c.args, path), c.edit);
      if (c.accepted.empty()) {
        ASSERT_FALSE(config.ok()) << "accepted, but expected: " << c.error;
        EXPECT_EQ(Placeholder(std::string(config.status().message()), path), c.error);
        return;
      }
      ASSERT_TRUE(config.ok()) << config.status();
      const std::string lf_path = WriteTemp(Case{}, c.same_config_as, c.name + "_lf");
      const absl::StatusOr<RunConfig> lf = ParseAndValidate({"--config", lf_path}, nullptr);
      ASSERT_TRUE(lf.ok()) << lf.status();
      EXPECT_EQ(config->ToJson(), lf->ToJson());
      EXPECT_EQ(config->scheduler.spec_k, 3);
      EXPECT_EQ(config->scheduler.max_num_seqs, 8);
      return;
    }
    case Kind::kCommand: {
      const std::string path = WriteTemp(c, c.text, "");
      std::vector<std::string> args = WithPath(c.args, path);
      args.insert(args.begin(), "run");
      args.insert(args.end(), {"--out", testing_util::ProcessTempDir("catalogue", c.name + "_out", false),
                               "--no-check"});
      std::vector<char*> argv = Argv(args);
      ::testing::internal::CaptureStderr();
      ::testing::internal::CaptureStdout();
      const int code = RunCommand(static_cast<int>(argv.size()), argv.data());
      const std::string out = ::testing::internal::GetCapturedStdout();
      const std::string err = ::testing::internal::GetCapturedStderr();
      EXPECT_EQ(code, c.exit_code);
      EXPECT_EQ(Placeholder(err, path), c.error + "\n");
      EXPECT_EQ(out, "");
      return;
    }
    case Kind::kSweep: {
      const std::string path = WriteTemp(c, c.text, "");
      std::vector<std::string> args = WithPath(c.args, path);
      args.insert(args.begin(), "sweep");
      std::vector<char*> argv = Argv(args);
      std::string help;
      const absl::StatusOr<SweepConfig> config =
          ParseSweepArgs(static_cast<int>(argv.size()), argv.data(), &help);
      ASSERT_FALSE(config.ok()) << "accepted, but expected: " << c.error;
      EXPECT_EQ(Placeholder(std::string(config.status().message()), path), c.error);
      return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, BadInputCatalogue, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(BadInputCatalogue, NamesAreUniqueAndEveryRowSaysWhatHappens) {
  std::vector<std::string> names;
  for (const Case& c : Cases()) {
    EXPECT_FALSE(c.input.empty()) << c.name;
    EXPECT_FALSE(c.error.empty() && c.accepted.empty()) << c.name;
    names.push_back(c.name);
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

// ---- the table of docs/bad-input.md

std::string Cell(const std::string& text) { return absl::StrReplaceAll(text, {{"|", "\\|"}}); }

std::string Outcome(const Case& c) {
  std::string out;
  if (!c.accepted.empty()) out = c.accepted;
  if (c.kind == Kind::kCommand) out = absl::StrCat("exit ", c.exit_code, ", stderr:");
  if (!c.error.empty()) out = absl::StrCat(out, out.empty() ? "" : " ", "`", c.error, "`");
  return Cell(out);
}

std::string RenderTable() {
  std::string table = "| input | format | what happens (exact error) |\n|---|---|---|\n";
  for (const Case& c : Cases())
    absl::StrAppend(&table, "| ", Cell(c.input), " | ", c.format, " | ", Outcome(c), " |\n");
  return table;
}

TEST(BadInputCatalogue, DocTableMatchesTheCases) {
  const std::string doc_path = (testing_util::SourceRoot() / "docs" / "bad-input.md").string();
  const std::string doc = SlurpFile(doc_path);
  ASSERT_FALSE(doc.empty()) << "cannot read " << doc_path;
  const std::string begin = "<!-- bad-input-catalogue:begin -->\n";
  const std::string end = "<!-- bad-input-catalogue:end -->";
  const size_t b = doc.find(begin);
  const size_t e = doc.find(end);
  // A blank line ends the table before the end marker.
  const std::string expected = RenderTable() + "\n";
  ASSERT_TRUE(b != std::string::npos && e != std::string::npos && b < e)
      << "docs/bad-input.md lacks the markers " << begin << "and " << end << "; the table to put between "
      << "them:\n" << expected;
  const std::string got = doc.substr(b + begin.size(), e - b - begin.size());
  // DSPARK_WRITE_CATALOGUE=1 writes the rendered table into docs/bad-input.md (then re-run).
  if (got != expected && std::getenv("DSPARK_WRITE_CATALOGUE") != nullptr) {
    std::ofstream(doc_path, std::ios::binary | std::ios::trunc)
        << doc.substr(0, b + begin.size()) << expected << doc.substr(e);
    GTEST_SKIP() << "wrote " << doc_path;
  }
  EXPECT_EQ(got, expected) << "docs/bad-input.md's table differs from the cases of "
                              "tests/robustness/bad_input_cases_*.cc; paste this between the markers:\n"
                           << expected;
}

}  // namespace
}  // namespace dspark::sim
