// The bad-input catalogue's case type and builders (docs/bad-input.md), shared by
// the file that runs and renders the cases (test_bad_input_catalogue.cc) and the files that
// hold the cases (bad_input_cases_*.cc).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "sim/studies/config.h"
#include "sim/workload/trace.h"

namespace dspark::sim::catalogue {

enum class Kind {
  kTrace,       // `text` is a trace file, parsed by LoadTrace with `options`
  kRunArgs,     // `args` after `dspark-sim run`: ParseRunArgs, then RunConfig::Validate
  kConfigFile,  // `text` is a --config file, then `args`; ParseRunArgs, then Validate
  kCommand,     // `dspark-sim run` itself: its exit code and the line it prints on stderr
  kSweep,       // `dspark-sim sweep` itself: its exit code and the last line on stderr
};

struct Case {
  std::string name;    // the test's name
  std::string input;   // docs/bad-input.md: what was tried (markdown)
  std::string format;  // docs/bad-input.md: trace format, or which part of `dspark-sim run`
  Kind kind = Kind::kTrace;
  std::string text;               // trace or config file contents
  bool absent = false;            // the file named by "<file>" does not exist
  // Makes "<file>" instead of writing `text` (a directory, a FIFO); "<file>" may also be
  // replaced by a fixed path in `args` (/dev/zero).
  std::function<void(const std::string& path)> prepare;
  std::vector<std::string> args;  // kRunArgs, kConfigFile, kCommand; "<file>": the temp file
  TraceOptions options;           // kTrace
  std::function<void(RunConfig*)> edit;  // kRunArgs: a change no option can make
  // The exact error, with the temp file's path written "<file>". For an accepted trace with
  // skipped rows: the first skipped row's message.
  std::string error;
  int exit_code = 0;  // kCommand
  // Accepted inputs: what docs/bad-input.md says happens, and what the parse must give.
  std::string accepted;
  std::vector<RequestSpec> requests;  // kTrace: exactly these (id, arrival, lengths)
  int64_t skipped = 0;                // kTrace: rows skipped under --skip-bad-rows
  int64_t failed = 0;                 // kTrace: BurstGPT failed requests
  std::string same_config_as;         // kConfigFile: a config text that must parse the same
};

inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// ---- the well-formed base of each format: two requests, arrivals exact in binary

inline const std::string kAzureHeader = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
inline const std::string kVidurHeader = "arrived_at,num_prefill_tokens,num_decode_tokens\n";
inline const std::string kBurstHeader =
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";

inline const std::string kAzureLf = kAzureHeader +
                             "2023-11-16 18:15:46.0000000,374,44\n"
                             "2023-11-16 18:15:50.5000000,396,109\n";
inline const std::string kVidurLf = kVidurHeader + "0.0,374,44\n4.5,396,109\n";
inline const std::string kBurstLf = kBurstHeader +
                             "5,ChatGPT,374,44,418,Conversation log\n"
                             "9.5,GPT-4,396,109,505,API log\n";
inline const std::string kMooncakeLf =
    "{\"timestamp\": 0, \"input_length\": 374, \"output_length\": 44, \"hash_ids\": [0, 1]}\n"
    "{\"timestamp\": 4500, \"input_length\": 396, \"output_length\": 109, \"hash_ids\": [0]}\n";
inline const std::string kJsonlLf =
    "{\"id\": 0, \"arrival_s\": 0.0, \"prompt_len\": 374, \"output_len\": 44}\n"
    "{\"id\": 1, \"arrival_s\": 4.5, \"prompt_len\": 396, \"output_len\": 109}\n";

// The first row of each base alone: a file to append one bad row to (it is then row 3, line 2 in
// the JSON formats).
inline const std::string kAzureOneRow = kAzureHeader + "2023-11-16 18:15:46.0000000,374,44\n";
inline const std::string kVidurOneRow = kVidurHeader + "0.0,374,44\n";
inline const std::string kBurstOneRow = kBurstHeader + "5,ChatGPT,374,44,418,Conversation log\n";
inline const std::string kMooncakeOneRow = "{\"timestamp\": 0, \"input_length\": 374, \"output_length\": 44}\n";
inline const std::string kJsonlOneRow = "{\"prompt_len\": 374, \"output_len\": 44}\n";

// What every base (and each of its accepted variants) parses to.
inline const std::vector<RequestSpec> kBase = {{0, 0.0, 374, 44, {}}, {1, 4.5, 396, 109, {}}};

inline std::string Crlf(const std::string& lf) { return absl::StrReplaceAll(lf, {{"\n", "\r\n"}}); }
inline std::string Bom(const std::string& text) { return "\xEF\xBB\xBF" + text; }
inline std::string NoFinalNewline(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// ---- case builders

inline Case TraceError(std::string name, std::string input, std::string format, std::string text,
                std::string error, TraceOptions options = {}) {
  Case c;
  c.name = std::move(name);
  c.input = std::move(input);
  c.format = std::move(format);
  c.kind = Kind::kTrace;
  c.text = std::move(text);
  c.error = std::move(error);
  c.options = options;
  return c;
}

inline Case TraceAccepted(std::string name, std::string input, std::string format, std::string text,
                   std::string accepted, std::vector<RequestSpec> requests,
                   TraceOptions options = {}) {
  Case c;
  c.name = std::move(name);
  c.input = std::move(input);
  c.format = std::move(format);
  c.kind = Kind::kTrace;
  c.text = std::move(text);
  c.accepted = std::move(accepted);
  c.requests = std::move(requests);
  c.options = options;
  return c;
}

inline Case RunArgs(std::string name, std::vector<std::string> args, std::string error) {
  Case c;
  c.name = std::move(name);
  c.input = absl::StrCat("`", absl::StrJoin(args, " "), "`");
  c.format = "run option";
  c.kind = Kind::kRunArgs;
  c.args = {"--workload", "chat"};
  c.args.insert(c.args.end(), args.begin(), args.end());
  c.error = std::move(error);
  return c;
}

inline Case ConfigFile(std::string name, std::string input, std::string text, std::string error) {
  Case c;
  c.name = std::move(name);
  c.input = std::move(input);
  c.format = "run --config file";
  c.kind = Kind::kConfigFile;
  c.text = std::move(text);
  c.args = {"--config", "<file>"};
  c.error = std::move(error);
  return c;
}

inline Case Command(std::string name, std::string input, std::string text, std::vector<std::string> args,
             int exit_code, std::string error) {
  Case c;
  c.name = std::move(name);
  c.input = std::move(input);
  c.format = "dspark-sim run";
  c.kind = Kind::kCommand;
  c.text = std::move(text);
  c.args = std::move(args);
  c.exit_code = exit_code;
  c.error = std::move(error);
  return c;
}

inline TraceOptions Forced(TraceFormat format) {
  TraceOptions o;
  o.format = format;
  return o;
}

inline TraceOptions MaxModelLen(int32_t tokens, bool skip = false) {
  TraceOptions o;
  o.max_model_len = tokens;
  o.skip_bad_rows = skip;
  return o;
}

inline TraceOptions Skip() {
  TraceOptions o;
  o.skip_bad_rows = true;
  return o;
}

inline const std::string kHeaderExpected =
    "field '(header)': expected a CSV header with TIMESTAMP,ContextTokens,GeneratedTokens "
    "(azure), arrived_at,num_prefill_tokens,num_decode_tokens (vidur) or Timestamp,Model,"
    "Request tokens,Response tokens,Total tokens,Log Type (burstgpt), or JSON objects "
    "(mooncake, jsonl), got ";

// The table's cases, in its order: trace files (bad_input_cases_trace.cc); what `run` is given
// (bad_input_cases_run.cc); unbounded and special inputs, numeric options that size memory and
// vLLM's conventions (bad_input_cases_io.cc).
std::vector<Case> TraceCases();
std::vector<Case> RunCases();
std::vector<Case> InputCases();

}  // namespace dspark::sim::catalogue
