#include "sim/workload/trace.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "sim/workload/input_file.h"
#include "sim/workload/trace_internal.h"
#include "sim/workload/utf8.h"

namespace dspark::sim {
namespace {

using namespace trace_internal;

constexpr int kSkippedExamples = 10;

bool IsCsvFormat(TraceFormat f) {
  return f == TraceFormat::kAzure || f == TraceFormat::kVidur || f == TraceFormat::kBurstGpt ||
         f == TraceFormat::kBurstGptLengths;
}

// Field names of a format, for the messages of checks that span fields or rows.
absl::string_view LengthFields(TraceFormat f) {
  switch (f) {
    case TraceFormat::kAzure: return "ContextTokens + GeneratedTokens";
    case TraceFormat::kVidur: return "num_prefill_tokens + num_decode_tokens";
    case TraceFormat::kBurstGpt:
    case TraceFormat::kBurstGptLengths: return "Request tokens + Response tokens";
    case TraceFormat::kMooncake: return "input_length + output_length";
    default: return "prompt_len + output_len";
  }
}

absl::string_view TimeField(TraceFormat f) {
  switch (f) {
    case TraceFormat::kAzure: return "TIMESTAMP";
    case TraceFormat::kVidur: return "arrived_at";
    case TraceFormat::kBurstGpt:
    case TraceFormat::kBurstGptLengths: return "Timestamp";
    case TraceFormat::kMooncake: return "timestamp";
    default: return "arrival_s";
  }
}

// An accepted row's arrival: the last one, against which the next is checked, and the first.
struct Arrival {
  int64_t whole_s = 0;
  double frac_s = 0.0;
  int64_t line = 0;
  std::string text;
};

// A time that a double cannot hold to 1 us (sim/trace.h kMaxArrivalS) would make every
// latency of the run round to 0: an error, never a silently wrong result. Relative formats
// are checked as written; Azure's absolute times by their distance from the first row.
absl::Status CheckTimeRange(TraceFormat format, const Location& loc, const RawRow& row,
                            const std::optional<Arrival>& first) {
  if (format != TraceFormat::kAzure) {
    if (row.frac_s < kMaxArrivalS) return absl::OkStatus();
    return RowError(loc, row.time_column, TimeField(format),
                    absl::StrCat("expected a time below 2^33 s = ",
                                 format == TraceFormat::kMooncake ? "8589934592000 ms"
                                                                  : "8589934592 s",
                                 ", where a double still resolves 1 us, got ",
                                 Quote(row.time_text)));
  }
  if (!first.has_value() || row.whole_s - first->whole_s < int64_t{1} << 33)
    return absl::OkStatus();
  return RowError(loc, row.time_column, TimeField(format),
                  absl::StrFormat("expected a time less than 2^33 s = 8589934592 s after the "
                                  "first row's %s (line %d), where a double still resolves 1 us, "
                                  "got %s",
                                  Quote(first->text), first->line, Quote(row.time_text)));
}

}  // namespace

absl::string_view TraceFormatName(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAuto: return "auto";
    case TraceFormat::kAzure: return "azure";
    case TraceFormat::kVidur: return "vidur";
    case TraceFormat::kBurstGpt: return "burstgpt";
    case TraceFormat::kBurstGptLengths: return "burstgpt-lengths";
    case TraceFormat::kMooncake: return "mooncake";
    case TraceFormat::kJsonl: return "jsonl";
  }
  return "?";
}

absl::string_view OverLengthName(OverLength policy) {
  switch (policy) {
    case OverLength::kError: return "error";
    case OverLength::kSkip: return "skip";
    case OverLength::kClip: return "clip";
  }
  return "?";
}

absl::StatusOr<OverLength> ParseOverLength(absl::string_view name) {
  for (OverLength p : {OverLength::kError, OverLength::kSkip, OverLength::kClip})
    if (name == OverLengthName(p)) return p;
  return absl::InvalidArgumentError(
      absl::StrCat("--over-length: expected error, skip or clip, got '", Abbreviate(name), "'"));
}

absl::StatusOr<TraceFormat> ParseTraceFormat(absl::string_view name) {
  for (TraceFormat f : {TraceFormat::kAuto, TraceFormat::kAzure, TraceFormat::kVidur,
                        TraceFormat::kBurstGpt, TraceFormat::kMooncake, TraceFormat::kJsonl,
                        TraceFormat::kBurstGptLengths})
    if (name == TraceFormatName(f)) return f;
  return absl::InvalidArgumentError(absl::StrCat(
      "--trace-format: expected auto, azure, vidur, burstgpt, mooncake, jsonl or "
      "burstgpt-lengths, got '", Abbreviate(name),
      "'"));
}

absl::StatusOr<Trace> ParseTrace(absl::string_view text, absl::string_view source,
                                 const TraceOptions& options) {
  Trace trace;
  trace.source = std::string(source);
  if (auto s = CheckEncoding(text, source); !s.ok()) return s;
  // The lines one at a time (no table of them: the parse holds the text, the accepted rows and
  // one line). No format quotes fields and JSON escapes control characters, so a CR left inside
  // a line means the file ends its lines in bare CR: read as one line it would mislead every
  // message.
  LineCursor cursor(text);
  absl::Status bare_cr = absl::OkStatus();
  const auto next_line = [&](Line* line) -> bool {
    if (!cursor.Next(line)) return false;
    if (const size_t cr = line->text.find('\r'); cr != absl::string_view::npos)
      bare_cr = RowError({source, line->number}, static_cast<int64_t>(cr + 1), "(line)",
                         "expected lines ending in LF or CRLF, got a bare CR (carriage return) "
                         "inside the line");
    return true;
  };
  Line first_line;
  bool any_line = false, found_first = false;
  while (next_line(&first_line)) {
    any_line = true;
    if (!bare_cr.ok()) return bare_cr;
    if (!IsBlank(first_line.text)) {
      found_first = true;
      break;
    }
  }
  if (!found_first) {
    const char* expected = options.format == TraceFormat::kAuto ? "a CSV header or a JSON object"
                           : IsCsvFormat(options.format)        ? "a CSV header"
                                                                : "a JSON object";
    return RowError({source, 1}, 1, "(file)",
                    absl::StrCat("expected ", expected, " on the first non-blank line, got ",
                                 !any_line ? "an empty file" : "only blank lines"));
  }
  const Location first_loc{source, first_line.number};
  const bool looks_json = absl::StripLeadingAsciiWhitespace(first_line.text).substr(0, 1) == "{";

  TraceFormat format = options.format;
  if (format == TraceFormat::kAuto) {
    absl::StatusOr<TraceFormat> detected =
        looks_json ? DetectJson(first_loc, first_line.text)
                   : DetectCsv(first_loc, first_line.text, SplitCsv(first_line.text));
    if (!detected.ok()) return detected.status();
    format = *detected;
  }
  trace.format = format;
  if (format == TraceFormat::kBurstGptLengths) trace.has_arrivals = false;

  // CSV: map required column names to positions in the header.
  std::vector<int> col;
  size_t header_fields = 0;
  if (IsCsvFormat(format)) {
    const std::vector<CsvField> header = SplitCsv(first_line.text);
    header_fields = header.size();
    for (const auto& name : LayoutOf(format).required) {
      int at = -1;
      for (size_t i = 0; i < header.size(); ++i) {
        if (header[i].text != name) continue;
        if (at >= 0)
          return RowError(first_loc, header[i].column, name,
                          absl::StrFormat("expected once in the header, got it again (first at "
                                          "column %d)",
                                          header[at].column));
        at = static_cast<int>(i);
      }
      // Vidur's processed CSVs of length-only datasets (arXiv summarization, ShareGPT, LMSYS)
      // have no arrival column.
      if (at < 0 && format == TraceFormat::kVidur && name == "arrived_at") {
        trace.has_arrivals = false;
        col.push_back(-1);
        continue;
      }
      if (at < 0)
        return RowError(first_loc, 1, name,
                        absl::StrCat("missing from the header; the ", TraceFormatName(format),
                                     " format needs columns ",
                                     absl::StrJoin(LayoutOf(format).required, ",")));
      col.push_back(at);
    }
  } else if (!looks_json) {
    return RowError(first_loc, 1, "(format)",
                    absl::StrCat("expected JSON objects for a ", TraceFormatName(format),
                                 " trace, got ", Quote(first_line.text)));
  }

  std::optional<Arrival> last, first_time;
  int64_t trace_last_whole = 0;
  double trace_last_frac = 0.0;
  absl::flat_hash_map<int64_t, int64_t> id_line;  // jsonl: explicit id -> line, for duplicates
  std::optional<bool> ids_given;  // jsonl: whether the first accepted row carried an id
  int64_t ids_decided_line = 0;
  int64_t next_index = 0;
  // A JSON format's first line is its first row; a CSV's is the header.
  bool pending_first = !IsCsvFormat(format);
  // Rows are in arrival order (a row before the previous one is refused), so the first accepted
  // row is the earliest and every request is converted as soon as it is accepted.
  int64_t base_whole = 0;
  double base_frac = 0.0;
  while (true) {
    Line line;
    if (pending_first) {
      line = first_line;
      pending_first = false;
    } else {
      if (!next_line(&line)) break;
      if (!bare_cr.ok()) return bare_cr;
    }
    if (IsBlank(line.text)) continue;
    ++trace.data_rows;
    const Location loc{source, line.number};
    RawRow row;
    row.id = next_index;
    bool has_id = false;
    absl::StatusOr<RowKind> kind = RowKind::kRequest;
    if (IsCsvFormat(format)) {
      const std::vector<CsvField> fields = SplitCsv(line.text);
      if (fields.size() != header_fields) {
        const int64_t column = fields.size() > header_fields
                                   ? fields[header_fields].column
                                   : static_cast<int64_t>(line.text.size() + 1);
        kind = RowError(loc, column, "(row)",
                        absl::StrFormat("expected %d comma-separated fields as in the header, "
                                        "got %d",
                                        header_fields, fields.size()));
      } else {
        kind = ParseCsvRow(format, loc, fields, col, &row);
      }
    } else if (format == TraceFormat::kMooncake) {
      kind = ParseMooncakeRow(loc, line.text, &row, &trace.has_hash_ids);
    } else {
      kind = ParseOwnJsonlRow(loc, line.text, &row, &has_id);
    }
    // vLLM rejects a request whose prompt plus output exceeds max_model_len; so does the replay.
    bool skip_row = false;  // --over-length skip: skipped whatever skip_bad_rows says
    if (kind.ok() && *kind == RowKind::kRequest && options.max_model_len > 0 &&
        options.over_length != OverLength::kClip &&
        int64_t{row.prompt_len} + row.output_len > options.max_model_len) {
      skip_row = options.over_length == OverLength::kSkip;
      kind = RowError(loc, row.prompt_column, LengthFields(format),
                      absl::StrFormat("expected at most max_model_len = %d tokens "
                                      "(--max-model-len), got %d + %d = %d",
                                      options.max_model_len, row.prompt_len, row.output_len,
                                      int64_t{row.prompt_len} + row.output_len));
    }
    if (kind.ok())
      if (absl::Status s = CheckTimeRange(format, loc, row, first_time); !s.ok()) kind = s;
    if (kind.ok() && last.has_value() &&
        (row.whole_s < last->whole_s || (row.whole_s == last->whole_s && row.frac_s < last->frac_s)))
      kind = RowError(loc, row.time_column, TimeField(format),
                      absl::StrFormat("expected rows in arrival order, a time >= %s (line %d), "
                                      "got %s",
                                      Quote(last->text), last->line, Quote(row.time_text)));
    if (kind.ok() && format == TraceFormat::kJsonl) {
      if (ids_given.has_value() && *ids_given != has_id) {
        kind = has_id ? RowError(loc, KeyColumn(line.text, "id"), "id",
                                 absl::StrFormat("expected no id, as line %d has none (give an "
                                                 "id on every row or on none)",
                                                 ids_decided_line))
                      : RowError(loc, 1, "id",
                                 absl::StrFormat("missing; expected an id on every row, as line "
                                                 "%d has one",
                                                 ids_decided_line));
      } else if (has_id) {
        if (const auto it = id_line.find(row.id); it != id_line.end())
          kind = RowError(loc, KeyColumn(line.text, "id"), "id",
                          absl::StrFormat("expected a unique id; %d is already used on line %d",
                                          row.id, it->second));
      }
    }
    if (!kind.ok()) {
      if (!options.skip_bad_rows && !skip_row) return kind.status();
      ++trace.skipped_rows;
      if (trace.skipped_examples.size() < kSkippedExamples)
        trace.skipped_examples.push_back(std::string(kind.status().message()));
      continue;
    }
    last = Arrival{row.whole_s, row.frac_s, line.number, row.time_text};
    if (!first_time.has_value()) first_time = *last;
    if (format == TraceFormat::kJsonl) {
      if (!ids_given.has_value()) {
        ids_given = has_id;
        ids_decided_line = line.number;
      }
      if (has_id) id_line.emplace(row.id, line.number);
    }
    ++next_index;
    if (*kind == RowKind::kFailedRequest) {
      ++trace.failed_requests;
      continue;
    }
    if (*kind == RowKind::kOtherModel) {
      ++trace.other_models_excluded;
      continue;
    }
    // Enough requests read (options.max_requests): the rows after the last one kept that arrive
    // at its time are still read, as the order of equal times is by id.
    if (options.max_requests > 0 && trace.accepted_requests >= options.max_requests &&
        (row.whole_s != trace_last_whole || row.frac_s != trace_last_frac)) {
      trace.read_whole_file = false;
      break;
    }
    if (trace.accepted_requests == 0) {
      base_whole = row.whole_s;
      base_frac = row.frac_s;
    }
    trace_last_whole = row.whole_s;
    trace_last_frac = row.frac_s;
    ++trace.accepted_requests;
    trace.longest_request = std::max<int64_t>(trace.longest_request, int64_t{row.prompt_len} + row.output_len);
    if (!options.keep_requests) continue;
    RequestSpec spec;
    spec.id = row.id;
    spec.arrival_s = static_cast<double>(row.whole_s - base_whole) + (row.frac_s - base_frac);
    spec.prompt_len = row.prompt_len;
    spec.output_len = row.output_len;
    spec.acceptance = std::move(row.acceptance);
    trace.requests.push_back(std::move(spec));
  }

  if (trace.data_rows == 0)
    return RowError({source, first_line.number + 1}, 1, "(rows)",
                    "expected at least one data row after the header, got none");
  if (trace.accepted_requests == 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected at least one request, got none (data rows: %d, skipped as bad: %d, failed "
        "requests with 0 response tokens: %d%s)",
        source, trace.data_rows, trace.skipped_rows, trace.failed_requests,
        format == TraceFormat::kBurstGptLengths
            ? absl::StrCat(", rows of a model other than GPT-4: ", trace.other_models_excluded)
            : ""));

  // Arrivals are non-decreasing already; the sort orders equal times by id.
  std::stable_sort(trace.requests.begin(), trace.requests.end(),
                   [](const RequestSpec& a, const RequestSpec& b) {
                     return a.arrival_s != b.arrival_s ? a.arrival_s < b.arrival_s : a.id < b.id;
                   });
  return trace;
}

absl::StatusOr<Trace> LoadTrace(const std::string& path, const TraceOptions& options) {
  absl::StatusOr<std::string> text = ReadInputFile(path, "--trace", options.read_limits);
  if (!text.ok()) return text.status();
  return ParseTrace(*text, path, options);
}

std::string ToJsonl(const std::vector<RequestSpec>& requests) {
  std::string out;
  for (const auto& r : requests) {
    nlohmann::json obj = {{"id", r.id},
                          {"arrival_s", r.arrival_s},
                          {"prompt_len", r.prompt_len},
                          {"output_len", r.output_len}};
    if (!r.acceptance.empty()) obj["acceptance"] = r.acceptance;
    absl::StrAppend(&out, obj.dump(), "\n");
  }
  return out;
}

}  // namespace dspark::sim
