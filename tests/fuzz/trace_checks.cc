#include "tests/fuzz/trace_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/fuzz/fuzz_require.h"

namespace dspark::fuzz {
namespace {

using sim::RequestSpec;
using sim::Trace;
using sim::TraceFormat;
using sim::TraceOptions;

// Number of skipped-row messages a trace keeps (sim/workload/trace.cc).
constexpr size_t kSkippedExamples = 10;

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

}  // namespace

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

}  // namespace dspark::fuzz
