#include "tests/fuzz/fuzz_targets.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "sim/model/acceptance.h"
#include "sim/studies/run.h"
#include "sim/studies/config.h"
#include "sim/workload/rng.h"
#include "sim/studies/sweep.h"
#include "sim/workload/trace.h"

namespace dspark::fuzz {
namespace {

using sim::RequestSpec;
using sim::Trace;
using sim::TraceFormat;
using sim::TraceOptions;

// The file name the trace targets give the parser; every message must start with it.
constexpr absl::string_view kSource = "fuzz.trace";
// Number of skipped-row messages a trace keeps (sim/workload/trace.cc).
constexpr size_t kSkippedExamples = 10;
// Argv tokens taken from one input; more are ignored, which keeps each run short.
constexpr size_t kMaxArgTokens = 32;
// Sweeps with more points than this are not planned (each point parses a run command line).
constexpr int64_t kMaxPlannedPoints = 16;

[[noreturn]] void Violated(absl::string_view condition, absl::string_view detail) {
  std::fprintf(stderr, "fuzz invariant violated: %.*s\n  %.*s\n",
               static_cast<int>(condition.size()), condition.data(),
               static_cast<int>(detail.size()), detail.data());
  std::fflush(stderr);
  std::abort();
}

#define FUZZ_REQUIRE(cond, ...) \
  do {                          \
    if (!(cond)) Violated(#cond, absl::StrCat(__VA_ARGS__)); \
  } while (0)

// Result files are JSON, written with nlohmann-json, which throws on text that is not UTF-8.
void RequireJsonWritable(const nlohmann::json& value, absl::string_view what) {
  try {
    FUZZ_REQUIRE(!value.dump().empty(), what);
  } catch (const nlohmann::json::exception& e) {
    Violated(absl::StrCat(what, " cannot be written as JSON"), e.what());
  }
}

absl::string_view AsText(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

// ---------------------------------------------------------------------------------------------
// Traces

// The lines of a trace file as TRACE_FORMATS.md defines them (a leading BOM dropped, "\n" or
// "\r\n" terminators, no line after a final terminator), written apart from the parser's own
// splitter so that the two can disagree.
std::vector<absl::string_view> TraceLines(absl::string_view text) {
  absl::ConsumePrefix(&text, "\xEF\xBB\xBF");
  std::vector<absl::string_view> lines;
  if (text.empty()) return lines;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::ConsumeSuffix(&line, "\r");
    lines.push_back(line);
  }
  if (text.back() == '\n') lines.pop_back();
  return lines;
}

bool IsBlank(absl::string_view s) { return absl::StripAsciiWhitespace(s).empty(); }

// A failed parse: InvalidArgument, "fuzz.trace:LINE:COLUMN: field 'NAME': ..." with LINE a
// non-blank line of the input and COLUMN inside it (or just past its end), or one of the two
// whole-file messages.
void CheckTraceError(const absl::Status& status, absl::string_view text) {
  const std::string full(status.message());
  FUZZ_REQUIRE(status.code() == absl::StatusCode::kInvalidArgument, status.ToString());
  // A sweep records a failed point's error in its JSON log.
  RequireJsonWritable(full, "the error message");
  absl::string_view msg = full;
  FUZZ_REQUIRE(absl::ConsumePrefix(&msg, kSource) && absl::ConsumePrefix(&msg, ":"),
               "message does not start with the source name: ", full);
  const std::vector<absl::string_view> lines = TraceLines(text);
  if (absl::ConsumePrefix(&msg, " ")) {
    if (absl::StartsWith(msg, "empty trace")) {
      for (absl::string_view line : lines)
        FUZZ_REQUIRE(IsBlank(line), "'empty trace' for a file with a non-blank line: ", full);
      return;
    }
    FUZZ_REQUIRE(absl::StartsWith(msg, "field 'id': ") || absl::StartsWith(msg, "expected at least one request, got none"),
                 "unexpected whole-file message: ", full);
    return;
  }
  const std::vector<absl::string_view> parts = absl::StrSplit(msg, absl::MaxSplits(':', 2));
  int64_t line = 0, column = 0;
  FUZZ_REQUIRE(parts.size() == 3 && absl::SimpleAtoi(parts[0], &line) &&
                   absl::SimpleAtoi(parts[1], &column),
               "expected 'fuzz.trace:LINE:COLUMN: ...', got: ", full);
  // One past the last line: what a file that ends too early (header only) is missing.
  FUZZ_REQUIRE(line >= 1 && line <= static_cast<int64_t>(lines.size()) + 1,
               "line outside the file (", lines.size(), " lines): ", full);
  FUZZ_REQUIRE(absl::StartsWith(parts[2], " field '"), "no field named: ", full);
  if (line == static_cast<int64_t>(lines.size()) + 1) {
    FUZZ_REQUIRE(column == 1, "column past the end of the file: ", full);
    return;
  }
  const absl::string_view text_line = lines[static_cast<size_t>(line - 1)];
  FUZZ_REQUIRE(!IsBlank(text_line), "error on a blank line: ", full);
  FUZZ_REQUIRE(column >= 1 && column <= static_cast<int64_t>(text_line.size()) + 1,
               "column outside the line (", text_line.size(), " bytes): ", full);
}

std::string Describe(const RequestSpec& r) {
  return absl::StrFormat("{id %d, arrival_s %.17g, prompt_len %d, output_len %d, acceptance [%s]}",
                         r.id, r.arrival_s, r.prompt_len, r.output_len,
                         absl::StrJoin(r.acceptance, ","));
}

void RequireSameRequests(const std::vector<RequestSpec>& a, const std::vector<RequestSpec>& b,
                         absl::string_view what) {
  FUZZ_REQUIRE(a.size() == b.size(), what, ": ", a.size(), " vs ", b.size(), " requests");
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same = a[i].id == b[i].id && a[i].arrival_s == b[i].arrival_s &&
                      a[i].prompt_len == b[i].prompt_len && a[i].output_len == b[i].output_len &&
                      a[i].acceptance == b[i].acceptance;
    FUZZ_REQUIRE(same, what, ": request ", i, " differs: ", Describe(a[i]), " vs ",
                 Describe(b[i]));
  }
}

// A successful parse: the documented guarantees of sim/workload/trace.h and TRACE_FORMATS.md.
void CheckTrace(const Trace& t, const TraceOptions& options, absl::string_view text) {
  FUZZ_REQUIRE(t.format != TraceFormat::kAuto, "no format recorded");
  if (options.format != TraceFormat::kAuto)
    FUZZ_REQUIRE(t.format == options.format, "format ", sim::TraceFormatName(t.format));
  FUZZ_REQUIRE(t.source == kSource, t.source);
  int64_t non_blank = 0;
  for (absl::string_view line : TraceLines(text)) non_blank += !IsBlank(line);
  FUZZ_REQUIRE(t.data_rows >= 0 && t.data_rows <= non_blank, t.data_rows, " of ", non_blank);
  FUZZ_REQUIRE(static_cast<int64_t>(t.requests.size()) + t.skipped_rows + t.failed_requests ==
                   t.data_rows,
               "rows unaccounted for: ", t.requests.size(), " requests + ", t.skipped_rows,
               " skipped + ", t.failed_requests, " failed != ", t.data_rows, " data rows");
  if (!options.skip_bad_rows) FUZZ_REQUIRE(t.skipped_rows == 0, t.skipped_rows);
  FUZZ_REQUIRE(t.skipped_examples.size() ==
                   std::min<size_t>(static_cast<size_t>(t.skipped_rows), kSkippedExamples),
               t.skipped_examples.size(), " examples of ", t.skipped_rows);
  for (const std::string& example : t.skipped_examples)
    CheckTraceError(absl::InvalidArgumentError(example), text);
  RequireJsonWritable(t.skipped_examples, "skipped_examples (summary.json)");
  if (t.format != TraceFormat::kBurstGpt) FUZZ_REQUIRE(t.failed_requests == 0, t.failed_requests);

  absl::flat_hash_set<int64_t> ids;
  for (size_t i = 0; i < t.requests.size(); ++i) {
    const RequestSpec& r = t.requests[i];
    FUZZ_REQUIRE(r.id >= 0 && ids.insert(r.id).second, "id negative or repeated: ", Describe(r));
    FUZZ_REQUIRE(r.prompt_len >= 1 && r.prompt_len <= sim::kMaxTraceTokens, Describe(r));
    FUZZ_REQUIRE(r.output_len >= 1 && r.output_len <= sim::kMaxTraceTokens, Describe(r));
    FUZZ_REQUIRE(std::isfinite(r.arrival_s) && r.arrival_s >= 0.0, Describe(r));
    FUZZ_REQUIRE(r.acceptance.size() <= static_cast<size_t>(sim::kMaxAcceptanceProfile),
                 Describe(r));
    if (t.format != TraceFormat::kJsonl) FUZZ_REQUIRE(r.acceptance.empty(), Describe(r));
    for (double p : r.acceptance) FUZZ_REQUIRE(p >= 0.0 && p <= 1.0, Describe(r));
    if (i > 0) {
      const RequestSpec& q = t.requests[i - 1];
      FUZZ_REQUIRE(q.arrival_s < r.arrival_s || (q.arrival_s == r.arrival_s && q.id < r.id),
                   "not sorted by (arrival_s, id): ", Describe(q), " before ", Describe(r));
    }
  }
  // Arrival times are relative to the earliest request.
  if (!t.requests.empty())
    FUZZ_REQUIRE(t.requests.front().arrival_s == 0.0, Describe(t.requests.front()));

  // Own JSONL holds every parsed workload exactly (--dump-workload relies on it).
  if (t.requests.empty()) return;
  const std::string jsonl = sim::ToJsonl(t.requests);
  const absl::StatusOr<Trace> again = sim::ParseTrace(jsonl, kSource, {TraceFormat::kJsonl, false});
  FUZZ_REQUIRE(again.ok(), "ToJsonl output does not parse: ", again.status().ToString(), "\n",
               jsonl);
  FUZZ_REQUIRE(again->format == TraceFormat::kJsonl && again->skipped_rows == 0 &&
                   again->data_rows == static_cast<int64_t>(t.requests.size()),
               "re-parsed JSONL: ", again->data_rows, " rows");
  RequireSameRequests(t.requests, again->requests, "ToJsonl round trip");
  FUZZ_REQUIRE(sim::ToJsonl(again->requests) == jsonl, "ToJsonl is not a fixed point");
}

int FuzzTrace(TraceFormat format, const uint8_t* data, size_t size) {
  const absl::string_view text = AsText(data, size);
  const TraceOptions strict_options{format, false};
  const TraceOptions skip_options{format, true};
  const absl::StatusOr<Trace> strict = sim::ParseTrace(text, kSource, strict_options);
  const absl::StatusOr<Trace> skip = sim::ParseTrace(text, kSource, skip_options);
  if (strict.ok()) {
    CheckTrace(*strict, strict_options, text);
    FUZZ_REQUIRE(skip.ok(), "strict parse succeeded, skip_bad_rows failed: ",
                 skip.status().ToString());
    FUZZ_REQUIRE(skip->skipped_rows == 0 && skip->format == strict->format &&
                     skip->data_rows == strict->data_rows &&
                     skip->failed_requests == strict->failed_requests,
                 "skip_bad_rows changed a clean parse");
    RequireSameRequests(strict->requests, skip->requests, "skip_bad_rows on a clean trace");
    // The detected format, forced, reads the file the same way.
    if (format == TraceFormat::kAuto) {
      const TraceOptions forced{strict->format, false};
      const absl::StatusOr<Trace> again = sim::ParseTrace(text, kSource, forced);
      FUZZ_REQUIRE(again.ok(), "detected ", sim::TraceFormatName(strict->format),
                   ", but forcing it fails: ", again.status().ToString());
      RequireSameRequests(strict->requests, again->requests, "forced detected format");
    }
    return 0;
  }
  CheckTraceError(strict.status(), text);
  if (skip.ok()) {
    CheckTrace(*skip, skip_options, text);
    // Rows are parsed independently, so the first skipped row is the one a strict parse stops at.
    FUZZ_REQUIRE(skip->skipped_rows >= 1 && skip->skipped_examples.front() == strict.status().message(),
                 "strict error '", strict.status().message(), "' is not the first skipped row (",
                 skip->skipped_rows, " skipped)");
  } else {
    CheckTraceError(skip.status(), text);
    FUZZ_REQUIRE(skip.status().message() == strict.status().message() ||
                     absl::StrContains(skip.status().message(), "expected every row or no row") ||
                     absl::StrContains(skip.status().message(), "expected at least one request, got none"),
                 "strict: ", strict.status().message(), "; skip: ", skip.status().message());
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Acceptance

// Runs the acceptance model on a [k] curve or per-request profile, as the engine does.
void CheckAcceptanceModel(const std::vector<double>& curve, const RequestSpec& spec, int k,
                          uint64_t seed) {
  sim::AcceptanceParams params;
  params.curve = curve;
  params.request_logit_sigma = 0.3;
  params.name = "fuzz";
  const sim::AcceptanceModel model(params, k);
  sim::Rng rng(seed);
  float p[sim::kMaxSpecK];
  float conf[sim::kMaxSpecK];
  model.InitRequest(spec, rng, p);
  for (int i = 0; i < k; ++i) {
    FUZZ_REQUIRE(p[i] >= 0.0f && p[i] <= 1.0f, "p[", i, "] = ", p[i]);
    if (!spec.acceptance.empty()) {
      const size_t from = std::min<size_t>(static_cast<size_t>(i), spec.acceptance.size() - 1);
      FUZZ_REQUIRE(p[i] == static_cast<float>(spec.acceptance[from]),
                   "profile position ", i, " not taken from element ", from);
    }
  }
  const int32_t prefix = sim::AcceptanceModel::DrawAcceptedPrefix(p, k, rng);
  FUZZ_REQUIRE(prefix >= 0 && prefix <= k, prefix);
  const int32_t accepted = model.DrawWithConfidences(p, k, rng, conf);
  FUZZ_REQUIRE(accepted >= 0 && accepted <= k, accepted);
  for (int i = 0; i < k; ++i)
    FUZZ_REQUIRE(conf[i] >= 0.0f && conf[i] <= 1.0f, "conf[", i, "] = ", conf[i]);
  const double length = sim::ExpectedAcceptanceLength(curve.data(), k);
  FUZZ_REQUIRE(length >= 1.0 && length <= 1.0 + k, length);
}

}  // namespace

int FuzzTraceAuto(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kAuto, d, n); }
int FuzzTraceAzure(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kAzure, d, n); }
int FuzzTraceVidur(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kVidur, d, n); }
int FuzzTraceBurstGpt(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kBurstGpt, d, n); }
int FuzzTraceMooncake(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kMooncake, d, n); }
int FuzzTraceJsonl(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kJsonl, d, n); }

int FuzzAcceptanceProfile(const uint8_t* data, size_t size) {
  std::string value(AsText(data, size));
  std::replace(value.begin(), value.end(), '\n', ' ');
  std::replace(value.begin(), value.end(), '\r', ' ');
  constexpr absl::string_view kHead = R"({"prompt_len": 1, "output_len": 1, "acceptance": )";
  const std::string line = absl::StrCat(kHead, value, "}");
  const absl::StatusOr<Trace> trace =
      sim::ParseTrace(line, kSource, {TraceFormat::kJsonl, false});
  if (trace.ok()) {
    CheckTrace(*trace, {TraceFormat::kJsonl, false}, line);
    FUZZ_REQUIRE(trace->requests.size() == 1, trace->requests.size());
  } else {
    CheckTraceError(trace.status(), line);
  }

  // When the value is JSON on its own, whether the row is accepted is decided here too. (A
  // leading BOM is skipped by a parse of the value alone but not inside the line.)
  // A NUL byte ends nlohmann-json's input, and the trace parser rejects it.
  if (absl::StartsWith(value, "\xEF\xBB\xBF") || absl::StrContains(value, '\0')) return 0;
  const nlohmann::json alone = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (alone.is_discarded()) return 0;
  std::vector<double> expected;
  bool valid = alone.is_array() && !alone.empty() &&
               alone.size() <= static_cast<size_t>(sim::kMaxAcceptanceProfile);
  for (size_t i = 0; valid && i < alone.size(); ++i) {
    valid = alone[i].is_number() && alone[i].get<double>() >= 0.0 && alone[i].get<double>() <= 1.0;
    if (valid) expected.push_back(alone[i].get<double>());
  }
  if (!valid) {
    FUZZ_REQUIRE(!trace.ok(), "accepted the profile ", alone.dump());
    const std::string at = absl::StrCat(kSource, ":1:", kHead.find("\"acceptance\"") + 1,
                                        ": field 'acceptance': ");
    FUZZ_REQUIRE(absl::StartsWith(trace.status().message(), at), "expected '", at, "...', got '",
                 trace.status().message(), "'");
    return 0;
  }
  FUZZ_REQUIRE(trace.ok(), "rejected the valid profile ", alone.dump(), ": ",
               trace.status().ToString());
  const RequestSpec& spec = trace->requests.front();
  FUZZ_REQUIRE(spec.acceptance == expected, Describe(spec));
  for (int k = 1; k <= sim::kMaxSpecK; ++k) {
    std::vector<double> curve(static_cast<size_t>(k));
    for (int i = 0; i < k; ++i)
      curve[static_cast<size_t>(i)] = expected[std::min<size_t>(static_cast<size_t>(i), expected.size() - 1)];
    CheckAcceptanceModel(curve, spec, k, static_cast<uint64_t>(size));
  }
  return 0;
}

int FuzzAcceptanceCurve(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int k = static_cast<int>(data[0] % 11) - 1;
  const absl::string_view text = AsText(data + 1, size - 1);
  const absl::StatusOr<std::vector<double>> curve = sim::ParseAcceptanceCurve(text, k);
  if (!curve.ok()) {
    const bool k_in_range = k >= 1 && k <= sim::kMaxSpecK;
    FUZZ_REQUIRE(curve.status().code() == (k_in_range ? absl::StatusCode::kInvalidArgument
                                                      : absl::StatusCode::kOutOfRange),
                 "K ", k, ": ", curve.status().ToString());
    FUZZ_REQUIRE(absl::StartsWith(curve.status().message(), "--acceptance-curve: "),
                 curve.status().message());
    return 0;
  }
  const size_t given = static_cast<size_t>(std::count(text.begin(), text.end(), ',')) + 1;
  FUZZ_REQUIRE(k >= 1 && k <= sim::kMaxSpecK && given <= static_cast<size_t>(k) &&
                   curve->size() == static_cast<size_t>(k),
               "K ", k, ", ", given, " values given, ", curve->size(), " returned");
  for (size_t i = 0; i < curve->size(); ++i) {
    FUZZ_REQUIRE((*curve)[i] >= 0.0 && (*curve)[i] <= 1.0, "p[", i, "] = ", (*curve)[i]);
    if (i >= given) FUZZ_REQUIRE((*curve)[i] == (*curve)[given - 1], "p[", i, "] not repeated");
  }
  // Printed with round-trip precision, the curve reads back unchanged.
  std::vector<std::string> printed;
  for (size_t i = 0; i < given; ++i) printed.push_back(absl::StrFormat("%.17g", (*curve)[i]));
  const auto again = sim::ParseAcceptanceCurve(absl::StrJoin(printed, ","), k);
  FUZZ_REQUIRE(again.ok() && *again == *curve, "round trip of ", absl::StrJoin(printed, ","));
  CheckAcceptanceModel(*curve, RequestSpec{}, k, static_cast<uint64_t>(size));
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Options

namespace {

// One config file per process (ctest and libFuzzer -jobs run several at once), removed at exit.
class TempConfigFile {
 public:
  TempConfigFile()
      : path_((std::filesystem::temp_directory_path() /
               absl::StrCat("dspark_fuzz_", getpid(), ".cfg"))
                  .string()) {}
  ~TempConfigFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& Write(absl::string_view text) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    FUZZ_REQUIRE(static_cast<bool>(out), "cannot write ", path_);
    return path_;
  }

 private:
  std::string path_;
};

TempConfigFile& ConfigFile() {
  static TempConfigFile* file = new TempConfigFile();
  return *file;
}

struct OptionInput {
  std::vector<std::string> args;  // argv after the subcommand and --config FILE
  std::string config_text;
};

OptionInput SplitOptionInput(absl::string_view text) {
  OptionInput in;
  size_t pos = 0;
  std::vector<std::string> lines;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    absl::string_view line = text.substr(pos, end - pos);
    absl::ConsumeSuffix(&line, "\r");
    if (line == "%%") {
      in.args = std::move(lines);
      if (in.args.size() > kMaxArgTokens) in.args.resize(kMaxArgTokens);
      in.config_text = std::string(text.substr(std::min(end + 1, text.size())));
      return in;
    }
    lines.emplace_back(line);
    pos = end + 1;
  }
  in.config_text = std::string(text);
  return in;
}

// argv for ParseRunArgs / ParseSweepArgs. The harness's --config comes first, so a second one
// among the fuzzed tokens (which could name any file) is rejected as given twice.
struct Argv {
  std::vector<std::string> storage;
  std::vector<char*> pointers;
  Argv(const char* command, const std::string& config_path, const std::vector<std::string>& args) {
    storage = {command, "--config", config_path};
    for (const std::string& a : args) storage.push_back(std::string(a.c_str()));  // up to a NUL
    for (std::string& s : storage) pointers.push_back(s.data());
    pointers.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(storage.size()); }
  char** argv() { return pointers.data(); }
};

// What the result writers do with a config: summary.json and sweep_meta.json dump it.
void CheckDumps(const sim::RunConfig& c) {
  RequireJsonWritable(c.ToJson(), "the run config (summary.json)");
  RequireJsonWritable(c.argv, "argv (summary.json meta)");
}

// The scheduler and the step plans size and index their arrays with int32 arithmetic on the
// validated limits (sim/model/scheduler.cc, kernels/batch.h); a config Validate accepts must keep it
// in range.
void CheckDerivedSizes(const sim::RunConfig& c) {
  const sim::SchedulerConfig& s = c.scheduler;
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  const int64_t rounded_len = int64_t{s.max_model_len} + s.block_size - 1;
  const int64_t bt_stride = rounded_len / s.block_size + s.bt_stride_pad;
  const int64_t bt_cells = bt_stride * s.max_num_seqs;
  const int64_t draft_slots = int64_t{s.max_num_seqs} * std::max(1, s.spec_k);
  FUZZ_REQUIRE(rounded_len <= kInt32Max && bt_stride <= kInt32Max && bt_cells <= kInt32Max &&
                   draft_slots <= kInt32Max && int64_t{s.max_num_seqs} + 1 <= kInt32Max,
               "max_model_len ", s.max_model_len, ", max_num_seqs ", s.max_num_seqs,
               ", bt_stride_pad ", s.bt_stride_pad, ", spec_k ", s.spec_k, ": block-table row ",
               bt_stride, ", cells ", bt_cells, ", draft slots ", draft_slots);
}

}  // namespace

int FuzzRunConfig(const uint8_t* data, size_t size) {
  const OptionInput in = SplitOptionInput(AsText(data, size));
  const std::string& path = ConfigFile().Write(in.config_text);
  Argv first("run", path, in.args);
  std::string help;
  const absl::StatusOr<sim::RunConfig> c = sim::ParseRunArgs(first.argc(), first.argv(), &help);
  if (!c.ok()) {
    FUZZ_REQUIRE(c.status().code() == absl::StatusCode::kInvalidArgument,
                 c.status().ToString());
    FUZZ_REQUIRE(!c.status().message().empty(), "empty message");
    return 0;
  }
  if (!help.empty()) {
    FUZZ_REQUIRE(absl::StrContains(help, "--trace"), help);
    return 0;
  }
  FUZZ_REQUIRE(c->config_file == path && static_cast<int>(c->argv.size()) == first.argc(),
               c->config_file);
  CheckDumps(*c);
  // Parsing is a function of argv and the file.
  Argv second("run", path, in.args);
  std::string help2;
  const absl::StatusOr<sim::RunConfig> c2 = sim::ParseRunArgs(second.argc(), second.argv(), &help2);
  FUZZ_REQUIRE(c2.ok() && c2->ToJson() == c->ToJson(), "a second parse differs");

  const absl::Status valid = c->Validate();
  if (!valid.ok()) {
    FUZZ_REQUIRE(valid.code() == absl::StatusCode::kInvalidArgument ||
                     valid.code() == absl::StatusCode::kOutOfRange,
                 valid.ToString());
    FUZZ_REQUIRE(!valid.message().empty(), "empty message");
    return 0;
  }
  // What ExecuteRun relies on after Validate.
  const int k = c->scheduler.spec_k;
  FUZZ_REQUIRE(k >= 1 && k <= sim::kMaxSpecK, "spec_k ", k);
  FUZZ_REQUIRE(!c->impls.empty(), "no implementation");
  FUZZ_REQUIRE(c->trace_path.empty() != c->workload.empty(), "trace and workload");
  CheckDerivedSizes(*c);
  if (!c->acceptance_curve.empty()) {
    const auto curve = sim::ParseAcceptanceCurve(c->acceptance_curve, k);
    FUZZ_REQUIRE(curve.ok() ? curve->size() == static_cast<size_t>(k)
                            : absl::StartsWith(curve.status().message(), "--acceptance-curve: "),
                 "acceptance curve '", c->acceptance_curve, "'");
  }
  if (!c->acceptance_preset.empty()) {
    const auto preset = sim::AcceptancePreset(c->acceptance_preset, k);
    FUZZ_REQUIRE(preset.ok() ? preset->curve.size() == static_cast<size_t>(k)
                             : !preset.status().message().empty(),
                 "acceptance preset '", c->acceptance_preset, "'");
  }
  return 0;
}

int FuzzSweepConfig(const uint8_t* data, size_t size) {
  const OptionInput in = SplitOptionInput(AsText(data, size));
  const std::string& path = ConfigFile().Write(in.config_text);
  Argv args("sweep", path, in.args);
  std::string help;
  const absl::StatusOr<sim::SweepConfig> c = sim::ParseSweepArgs(args.argc(), args.argv(), &help);
  if (!c.ok()) {
    FUZZ_REQUIRE(c.status().code() == absl::StatusCode::kInvalidArgument ||
                     c.status().code() == absl::StatusCode::kOutOfRange,
                 c.status().ToString());
    FUZZ_REQUIRE(!c.status().message().empty(), "empty message");
    return 0;
  }
  if (!help.empty()) return 0;
  FUZZ_REQUIRE(c->config_file == path, c->config_file);
  const absl::Status valid = c->Validate();
  FUZZ_REQUIRE(valid.ok(), "ParseSweepArgs returned a config that Validate rejects: ",
               valid.ToString());
  RequireJsonWritable(c->argv, "argv (sweep_meta.json)");
  if (!c->merge_inputs.empty()) return 0;

  const int64_t planned = static_cast<int64_t>(c->workloads.size() + c->traces.size()) *
                          static_cast<int64_t>(c->batch_sizes.size()) *
                          static_cast<int64_t>(c->num_requests.size()) *
                          static_cast<int64_t>(c->concurrency.size()) *
                          static_cast<int64_t>(c->modes.size()) *
                          static_cast<int64_t>(c->impls.size());
  if (planned > kMaxPlannedPoints) return 0;
  const absl::StatusOr<std::vector<sim::SweepPoint>> points = sim::PlanSweep(*c);
  if (!points.ok()) {
    FUZZ_REQUIRE(points.status().code() == absl::StatusCode::kInvalidArgument &&
                     !points.status().message().empty(),
                 points.status().ToString());
    return 0;
  }
  FUZZ_REQUIRE(static_cast<int64_t>(points->size()) == planned, points->size(), " of ", planned);
  absl::flat_hash_set<std::string> ids;
  for (const sim::SweepPoint& p : *points) {
    FUZZ_REQUIRE(!p.id.empty() && ids.insert(p.id).second, "id '", p.id, "'");
    FUZZ_REQUIRE(p.config.argv == p.run_argv, p.id);
    CheckDumps(p.config);
    if (p.skip_reason.empty()) CheckDerivedSizes(p.config);
    else RequireJsonWritable(sim::MakeSkippedRow(p, *c), "a skipped row (sweep.jsonl)");
  }
  return 0;
}

const std::vector<FuzzTarget>& AllFuzzTargets() {
  static const auto* targets = new std::vector<FuzzTarget>{
      {"trace_auto", FuzzTraceAuto},
      {"trace_azure", FuzzTraceAzure},
      {"trace_vidur", FuzzTraceVidur},
      {"trace_burstgpt", FuzzTraceBurstGpt},
      {"trace_mooncake", FuzzTraceMooncake},
      {"trace_jsonl", FuzzTraceJsonl},
      {"acceptance_profile", FuzzAcceptanceProfile},
      {"acceptance_curve", FuzzAcceptanceCurve},
      {"run_config", FuzzRunConfig},
      {"sweep_config", FuzzSweepConfig},
      {"batch_layout", FuzzBatchLayout},
  };
  return *targets;
}

}  // namespace dspark::fuzz
