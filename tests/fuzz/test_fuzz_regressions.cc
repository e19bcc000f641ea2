// What fuzzing found (tests/fuzz/, scripts/fuzz.sh), one named test per defect with the exact
// outcome now expected. The crashing inputs themselves are replayed from tests/fuzz/regressions/
// by tests/fuzz/test_fuzz_corpus.cc.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/model/acceptance.h"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "sim/workload/trace.h"
#include "sim/workload/utf8.h"
#include "tests/common/spawn_util.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

std::string TraceError(const std::string& text, TraceFormat format = TraceFormat::kAuto) {
  const absl::StatusOr<Trace> trace = ParseTrace(text, "t.jsonl", {format, false});
  if (trace.ok()) return "parsed";
  EXPECT_EQ(trace.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(trace.status().message());
}

// nlohmann-json reports a number beyond double's range as out_of_range, not parse_error; it
// escaped the row parser as an exception and ended the process.
TEST(FuzzRegressions, JsonNumberBeyondDoubleIsARowError) {
  EXPECT_EQ(TraceError(R"({"timestamp": 9e1000, "input_length": 1, "output_length": 1})"),
            "t.jsonl:1:15: field '(json)': expected one JSON object per line: "
            "number overflow parsing '9e1000'");
  EXPECT_EQ(TraceError("{\"prompt_len\": 1, \"output_len\": 1}\n"
                       "{\"prompt_len\": 1, \"output_len\": 1, \"arrival_s\": -1e400}",
                       TraceFormat::kJsonl),
            "t.jsonl:2:49: field '(json)': expected one JSON object per line: "
            "number overflow parsing '-1e400'");
  // Format detection parses the first object too.
  EXPECT_EQ(TraceError(R"({"":9e1000)"),
            "t.jsonl:1:5: field '(json)': expected one JSON object per line: "
            "number overflow parsing '9e1000'");
}

// nlohmann-json ends its input at a NUL byte, so the rest of the line was silently ignored.
TEST(FuzzRegressions, NulByteInAJsonLineIsARowError) {
  constexpr char kJsonl[] = "{\"prompt_len\": 1, \"output_len\": 1}\0{\"x\": 1}";
  EXPECT_EQ(TraceError(std::string(kJsonl, sizeof(kJsonl) - 1), TraceFormat::kJsonl),
            "t.jsonl:1:35: field '(json)': expected one JSON object per line, got a NUL byte");
  constexpr char kMooncake[] = "{\"timestamp\": 0, \"input_length\": 1\0, \"output_length\": 1}";
  EXPECT_EQ(TraceError(std::string(kMooncake, sizeof(kMooncake) - 1), TraceFormat::kMooncake),
            "t.jsonl:1:35: field '(json)': expected one JSON object per line, got a NUL byte");
}

// Messages quote the file's bytes; summary.json (skipped_examples) and a sweep's failed row hold
// them as JSON strings, which nlohmann-json refuses to write unless they are UTF-8. Bytes outside
// a UTF-8 sequence are written as \xHH, also where the 40-byte quote cuts a character in two.
TEST(FuzzRegressions, QuotedTraceBytesAreValidUtf8) {
  EXPECT_EQ(TraceError("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-01-02 03:04:05,3\xff,4\n"),
            "t.jsonl:2:21: field 'ContextTokens': expected an integer token count, got '3\\xFF'");
  const std::string long_field = std::string(39, '7') + "\xc3\xa9";  // "é" across byte 40
  EXPECT_EQ(TraceError("arrived_at,num_prefill_tokens,num_decode_tokens\n0," + long_field + ",1\n"),
            "t.jsonl:2:3: field 'num_prefill_tokens': expected an integer token count, got '" +
                std::string(39, '7') + "\\xC3...'");
  EXPECT_EQ(TraceError("{\"prompt_len\": 1, \"output_len\": 1, \"caf\u00e9\": 1}", TraceFormat::kJsonl),
            "t.jsonl:1:36: field 'caf\xc3\xa9': unknown key; expected id, arrival_s, prompt_len, "
            "output_len, acceptance");
}

TEST(FuzzRegressions, Utf8CheckFollowsRfc3629) {
  EXPECT_EQ(FirstInvalidUtf8("plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), absl::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("\xc0\xaf"), 0u);          // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("ab\xed\xa0\x80"), 2u);    // surrogate U+D800
  EXPECT_EQ(FirstInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // U+110000
  EXPECT_EQ(FirstInvalidUtf8("x\xe2\x82"), 1u);         // cut short
  EXPECT_EQ(EscapeInvalidUtf8("a\xff\xc3\xa9\x80"), "a\\xFF\xc3\xa9\\x80");
  EXPECT_EQ(CheckTextIsUtf8("a = 1\nb = \xfe\n", "f.cfg").message(),
            "f.cfg:2:5: expected UTF-8 text, got byte 0xFE");
}

absl::StatusOr<RunConfig> RunArgs(std::vector<std::string> args) {
  args.insert(args.begin(), "run");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::string help;
  return ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
}

absl::StatusOr<SweepConfig> SweepArgs(std::vector<std::string> args) {
  args.insert(args.begin(), "sweep");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::string help;
  return ParseSweepArgs(static_cast<int>(argv.size()), argv.data(), &help);
}

// summary.json and sweep_meta.json hold argv and the options; a non-UTF-8 byte made the JSON
// writer throw (sweep: found by fuzzing; run: the same path).
TEST(FuzzRegressions, NonUtf8OptionsAreRejectedWhereTheyEnter) {
  const auto run = RunArgs({"--workload", "chat", "--out", "res\xe9"});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message(),
            "argument 4 ('res\\xE9'): expected UTF-8 text, got byte 0xE9 at offset 3");
  const auto sweep = SweepArgs({"--spec-k\x8e", "4"});
  ASSERT_FALSE(sweep.ok());
  EXPECT_EQ(sweep.status().message(),
            "argument 1 ('--spec-k\\x8E'): expected UTF-8 text, got byte 0x8E at offset 8");
  const std::string dir = testing_util::ProcessTempDir("fuzz_regressions", "utf8", true);
  std::ofstream(dir + "/bad.cfg") << "workload = chat\nout = r\xff\n";
  for (const auto& status : {RunArgs({"--config", dir + "/bad.cfg"}).status(),
                             SweepArgs({"--config", dir + "/bad.cfg"}).status()})
    EXPECT_EQ(status.message(), dir + "/bad.cfg:2:8: expected UTF-8 text, got byte 0xFF");
  EXPECT_TRUE(RunArgs({"--workload", "chat", "--out", "r\xc3\xa9sultats"}).ok());
}

// (max_model_len + 63) / 64 overflowed int32 in Validate (and the scheduler) at 2^31 - 1.
TEST(FuzzRegressions, RunLimitsKeepTheSchedulersInt32SizesInRange) {
  const auto validate = [](std::vector<std::string> args) {
    args.insert(args.end(), {"--workload", "chat"});
    const auto c = RunArgs(args);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? c->Validate() : c.status();
  };
  const absl::Status too_long = validate({"--max-model-len", "2147483647"});
  EXPECT_EQ(too_long.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(too_long.message(), "--max-model-len: expected an integer in [2, 16777216], got 2147483647");
  // The metadata check bounds the step's buffers; without it only the int32 limits apply.
  EXPECT_TRUE(validate({"--max-model-len", "16777216", "--max-num-seqs", "8", "--no-check"}).ok());
  EXPECT_EQ(validate({"--mode", "none", "--max-num-seqs", "1000000", "--max-num-batched-tokens",
                      "1000000", "--bt-stride-pad", "2000", "--no-check"})
                .message(),
            "--max-num-seqs=1000000 rows of 2256 block-table entries (max_model_len / 64 rounded "
            "up, plus --bt-stride-pad=2000) make 2256000000 entries, more than an int32 index "
            "reaches (2147483647)");
  EXPECT_EQ(validate({"--mode", "none", "--max-num-seqs", "300000000", "--max-num-batched-tokens",
                      "300000000", "--max-model-len", "2", "--spec-k", "8"})
                .message(),
            "--max-num-seqs: expected an integer in [1, 1048576], got 300000000");
}

// A K above kMaxSpecK gave a curve longer than AcceptanceModel holds.
TEST(FuzzRegressions, AcceptanceCurveChecksK) {
  for (int k : {-1, 0, 9}) {
    const auto curve = ParseAcceptanceCurve("0.5", k);
    ASSERT_FALSE(curve.ok()) << k;
    EXPECT_EQ(curve.status().code(), absl::StatusCode::kOutOfRange);
    EXPECT_EQ(curve.status().message(),
              absl::StrCat("--acceptance-curve: K=", k, " must be in [1, 8]"));
  }
  EXPECT_EQ(*ParseAcceptanceCurve("0.5", 8), std::vector<double>(8, 0.5));
}

// Boost.Program_options 1.74 replaces each %placeholder% of an error message until none is
// left, so an error about an option or value containing its own placeholder never returned
// (found by fuzzing: the config line below hung `run`).
TEST(FuzzRegressions, BoostPlaceholdersInOptionsAreRejectedBeforeBoostSeesThem) {
  const std::string dir = testing_util::ProcessTempDir("fuzz_regressions", "placeholders", true);
  const std::string path = dir + "/p.cfg";
  std::ofstream(path) << "workload = chat\ns%original_token%bad-rows = true\n";
  constexpr char kWhy[] =
      "Boost.Program_options cannot report an error about such text: it loops forever)";
  EXPECT_EQ(RunArgs({"--config", path}).status().message(),
            path + ":2:2: expected no '%original_token%' (" + kWhy);
  EXPECT_EQ(SweepArgs({"--config", path}).status().message(),
            path + ":2:2: expected no '%original_token%' (" + kWhy);
  EXPECT_EQ(RunArgs({"--workload", "chat", "--seed", "%value%"}).status().message(),
            std::string("argument 4 ('%value%'): expected no '%value%' (") + kWhy);
  EXPECT_EQ(SweepArgs({"--x%canonical_option%y"}).status().message(),
            std::string("argument 1 ('--x%canonical_option%y'): expected no '%canonical_option%' (") +
                kWhy);
  std::ofstream(path) << "%invalid_line%\n";  // the invalid line is quoted in the message
  EXPECT_EQ(RunArgs({"--config", path}).status().message(),
            path + ":1:1: expected no '%invalid_line%' (" + kWhy);
  // A lone % is fine.
  EXPECT_TRUE(RunArgs({"--workload", "chat", "--out", "results/50%"}).ok());
}

// The same Boost hang reached every other command's options: the dispatcher now checks them all.
TEST(FuzzRegressions, EveryCommandRefusesBoostPlaceholdersInsteadOfHanging) {
  if (testing_util::SimBinary().empty()) GTEST_SKIP() << "no dspark-sim binary beside the test binary";
  const std::string dir = testing_util::ProcessTempDir("fuzz_regressions", "commands", true);
  for (const char* command : {"run", "sweep", "verify", "bench", "calibrate", "microbench", "soak"}) {
    SCOPED_TRACE(command);
    const testing_util::SpawnResult r = testing_util::SpawnSim({command, "--seed", "%value%"}, {}, dir);
    ASSERT_TRUE(r.started && r.exited) << "signal " << r.signal;
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, absl::StrCat("dspark-sim ", command,
                                  ": argument 2 ('%value%'): expected no '%value%' (Boost.Program_options cannot "
                                  "report an error about such text: it loops forever)\n"));
  }
}

// Not a crash (seen while writing the run_config target): Boost's errors about a --config file
// did not say they came from the file.
TEST(OptionMessages, ConfigFileErrorsNameTheFile) {
  const std::string dir = testing_util::ProcessTempDir("fuzz_regressions", "cfg_errors", true);
  const std::string path = dir + "/c.cfg";
  std::ofstream(path) << "workload = chat\nnot a key value line\n";
  EXPECT_EQ(RunArgs({"--config", path}).status().message(),
            path + ":2: the options configuration file contains an invalid line 'not a key value "
                   "line' (see dspark-sim run --help)");
  EXPECT_EQ(SweepArgs({"--config", path}).status().message(),
            path + ": the options configuration file contains an invalid line 'not a key value "
                   "line' (see dspark-sim sweep --help)");
  std::ofstream(path) << "workload = chat\nspec-k = 4\nspec-k = 5\nseeed = 1\n";
  EXPECT_EQ(RunArgs({"--config", path}).status().message(),
            path + ":4: unrecognised option 'seeed'; did you mean seed? (see dspark-sim run --help)");
}

// `sweep --config` reads its file as `run --config` does (sim/options/option_errors.h ReadConfigFile), so
// a UTF-8 byte-order mark, which the catalogue accepts for run, is accepted for sweep too.
TEST(OptionMessages, SweepConfigFileWithAByteOrderMarkReadsLikeRun) {
  const std::string dir = testing_util::ProcessTempDir("fuzz_regressions", "cfg_bom", true);
  std::ofstream(dir + "/plain.cfg") << "workload = chat\nconcurrency = 1,8\n";
  std::ofstream(dir + "/bom.cfg") << "\xEF\xBB\xBFworkload = chat\nconcurrency = 1,8\n";
  const auto plain = SweepArgs({"--config", dir + "/plain.cfg"});
  const auto bom = SweepArgs({"--config", dir + "/bom.cfg"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(bom.ok()) << bom.status();
  EXPECT_EQ(bom->workloads, plain->workloads);
  EXPECT_EQ(bom->concurrency, plain->concurrency);
  EXPECT_EQ(SweepArgs({"--config", dir + "/absent.cfg"}).status().message(),
            "--config: cannot open '" + dir + "/absent.cfg': No such file or directory");
}

// --merge returned its config without Validate, so an empty --out got through.
TEST(FuzzRegressions, SweepMergeValidatesOut) {
  const auto c = SweepArgs({"--merge", "a", "b", "--out", ""});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "--out: expected a directory");
}

}  // namespace
}  // namespace dspark::sim
