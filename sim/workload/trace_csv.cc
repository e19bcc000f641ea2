// The CSV trace formats: Azure, Vidur/Splitwise, BurstGPT (trace_internal.h).
#include "sim/workload/trace_internal.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace dspark::sim::trace_internal {
namespace {

absl::StatusOr<int32_t> ParseTokens(const Location& loc, const CsvField& f, absl::string_view name,
                                    int32_t min_value) {
  int64_t v = 0;
  // Digits that overflow int64 are still an integer, just out of range: never wrapped.
  const bool parsed = absl::SimpleAtoi(f.text, &v);
  if (!parsed && !IsIntegerText(f.text))
    return RowError(loc, f.column, name,
                    absl::StrCat("expected an integer token count, got ", Quote(f.text)));
  if (!parsed || v < min_value || v > kMaxTraceTokens)
    return RowError(loc, f.column, name,
                    absl::StrCat(RangeExpectation(min_value, kMaxTraceTokens), Abbreviate(f.text)));
  return static_cast<int32_t>(v);
}

// A request's prompt (>= 1 tokens) and output (>= min_output) lengths, in that order, into `row`.
absl::Status ParseLengths(const Location& loc, const CsvField& prompt_field, absl::string_view prompt_name,
                          const CsvField& output_field, absl::string_view output_name, int32_t min_output,
                          RawRow* row) {
  absl::StatusOr<int32_t> prompt = ParseTokens(loc, prompt_field, prompt_name, 1);
  if (!prompt.ok()) return prompt.status();
  absl::StatusOr<int32_t> output = ParseTokens(loc, output_field, output_name, min_output);
  if (!output.ok()) return output.status();
  row->prompt_len = *prompt;
  row->output_len = *output;
  row->prompt_column = prompt_field.column;
  return absl::OkStatus();
}

absl::StatusOr<double> ParseSeconds(const Location& loc, const CsvField& f, absl::string_view name) {
  double v = 0;
  if (!absl::SimpleAtod(f.text, &v) || !std::isfinite(v) || v < 0)
    return RowError(loc, f.column, name,
                    absl::StrCat("expected a finite number of seconds >= 0, got ", Quote(f.text)));
  return v;
}

bool ParseFixedDigits(absl::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// "YYYY-MM-DD HH:MM:SS[.fraction]" in UTC.
absl::Status ParseAzureTimestamp(const Location& loc, const CsvField& f, RawRow* row) {
  const absl::string_view s = f.text;
  int year, month, day, hour, minute, second;
  const bool shape_ok = s.size() >= 19 && ParseFixedDigits(s, 0, 4, &year) && s[4] == '-' &&
                        ParseFixedDigits(s, 5, 2, &month) && s[7] == '-' &&
                        ParseFixedDigits(s, 8, 2, &day) && (s[10] == ' ' || s[10] == 'T') &&
                        ParseFixedDigits(s, 11, 2, &hour) && s[13] == ':' &&
                        ParseFixedDigits(s, 14, 2, &minute) && s[16] == ':' &&
                        ParseFixedDigits(s, 17, 2, &second);
  if (!shape_ok)
    return RowError(loc, f.column, "TIMESTAMP",
                    absl::StrCat("expected 'YYYY-MM-DD HH:MM:SS[.fraction]', got ", Quote(s)));
  const absl::CivilSecond civil(year, month, day, hour, minute, second);
  // CivilSecond normalises out-of-range fields (month 13 -> next January); reject those.
  if (civil.year() != year || civil.month() != month || civil.day() != day ||
      civil.hour() != hour || civil.minute() != minute || civil.second() != second)
    return RowError(loc, f.column, "TIMESTAMP",
                    absl::StrCat("expected a valid calendar date and time, got ", Quote(s)));
  double frac = 0.0;
  if (s.size() > 19) {
    if (s[19] != '.' || s.size() == 20)
      return RowError(loc, f.column + 19, "TIMESTAMP",
                      absl::StrCat("expected '.' and fraction digits after the seconds, got ",
                                   Quote(s.substr(19))));
    double scale = 0.1;
    for (size_t i = 20; i < s.size(); ++i) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(s[i])))
        return RowError(loc, f.column + static_cast<int64_t>(i), "TIMESTAMP",
                        absl::StrCat("expected fraction digits, got ", Quote(s.substr(i))));
      frac += (s[i] - '0') * scale;
      scale *= 0.1;
    }
  }
  row->whole_s = absl::ToUnixSeconds(absl::FromCivil(civil, absl::UTCTimeZone()));
  row->frac_s = frac;
  row->time_column = f.column;
  row->time_text = std::string(s);
  return absl::OkStatus();
}

const std::vector<CsvLayout>& CsvLayouts() {
  static const auto* layouts = new std::vector<CsvLayout>{
      {TraceFormat::kAzure, {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}},
      {TraceFormat::kVidur, {"arrived_at", "num_prefill_tokens", "num_decode_tokens"}},
      {TraceFormat::kBurstGpt,
       {"Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"}},
  };
  return *layouts;
}

}  // namespace

std::vector<CsvField> SplitCsv(absl::string_view line) {
  std::vector<CsvField> fields;
  size_t start = 0;
  for (absl::string_view piece : absl::StrSplit(line, ',')) {
    const size_t lead = piece.size() - absl::StripLeadingAsciiWhitespace(piece).size();
    fields.push_back({absl::StripAsciiWhitespace(piece), static_cast<int64_t>(start + lead + 1)});
    start += piece.size() + 1;
  }
  return fields;
}

const CsvLayout& LayoutOf(TraceFormat format) {
  if (format == TraceFormat::kBurstGptLengths) format = TraceFormat::kBurstGpt;
  for (const auto& l : CsvLayouts())
    if (l.format == format) return l;
  return CsvLayouts().front();
}

absl::StatusOr<RowKind> ParseCsvRow(TraceFormat format, const Location& loc,
                                    const std::vector<CsvField>& fields,
                                    const std::vector<int>& col, RawRow* row) {
  switch (format) {
    case TraceFormat::kAzure: {
      if (auto s = ParseAzureTimestamp(loc, fields[col[0]], row); !s.ok()) return s;
      if (auto s = ParseLengths(loc, fields[col[1]], "ContextTokens", fields[col[2]], "GeneratedTokens", 1, row);
          !s.ok())
        return s;
      return RowKind::kRequest;
    }
    case TraceFormat::kVidur: {
      // A length-only CSV (no arrived_at column, col[0] < 0) arrives at 0; the run re-times it.
      absl::StatusOr<double> t = 0.0;
      if (col[0] >= 0) t = ParseSeconds(loc, fields[col[0]], "arrived_at");
      if (!t.ok()) return t.status();
      if (auto s = ParseLengths(loc, fields[col[1]], "num_prefill_tokens", fields[col[2]], "num_decode_tokens", 1,
                                row);
          !s.ok())
        return s;
      row->frac_s = *t;
      row->time_column = col[0] >= 0 ? fields[col[0]].column : 1;
      row->time_text = col[0] >= 0 ? std::string(fields[col[0]].text) : "0 (no arrived_at)";
      return RowKind::kRequest;
    }
    case TraceFormat::kBurstGpt:
    case TraceFormat::kBurstGptLengths: {
      // Lengths only: the timestamp is not read (the run re-times the requests).
      const bool lengths_only = format == TraceFormat::kBurstGptLengths;
      absl::StatusOr<double> t = 0.0;
      if (!lengths_only) t = ParseSeconds(loc, fields[col[0]], "Timestamp");
      if (!t.ok()) return t.status();
      if (fields[col[1]].text.empty())
        return RowError(loc, fields[col[1]].column, "Model", "expected a model name, got ''");
      if (auto s = ParseLengths(loc, fields[col[2]], "Request tokens", fields[col[3]], "Response tokens", 0, row);
          !s.ok())
        return s;
      const int64_t sum = int64_t{row->prompt_len} + row->output_len;
      int64_t total = 0;
      const CsvField& tf = fields[col[4]];
      if (!absl::SimpleAtoi(tf.text, &total) || total != sum)
        return RowError(loc, tf.column, "Total tokens",
                        absl::StrFormat("expected Request tokens + Response tokens = %d, got %s", sum, Quote(tf.text)));
      if (fields[col[5]].text.empty())
        return RowError(loc, fields[col[5]].column, "Log Type", "expected a log type, got ''");
      row->frac_s = *t;
      row->time_column = fields[col[0]].column;
      row->time_text = lengths_only ? "0 (lengths only)" : std::string(fields[col[0]].text);
      // A logged request with no response failed in the original service: it is not part of
      // the offered load that completed, and a zero-length output cannot be simulated.
      if (row->output_len == 0) return RowKind::kFailedRequest;
      // vLLM's BurstGPTDataset.load_data(): df[df["Model"] == "GPT-4"].
      if (lengths_only && fields[col[1]].text != "GPT-4") return RowKind::kOtherModel;
      return RowKind::kRequest;
    }
    default:
      return absl::InternalError("not a CSV format");
  }
}

namespace {

// How many of `layout`'s required columns the header holds.
int RequiredColumnsFound(const CsvLayout& layout, const std::vector<CsvField>& header) {
  int found = 0;
  for (const auto& name : layout.required)
    found += std::any_of(header.begin(), header.end(), [&](const CsvField& f) { return f.text == name; }) ? 1 : 0;
  return found;
}

}  // namespace

// The layout with the most required columns in the header, so that a header with a typo in
// one column is reported as that column missing; an error when no column matches at all.
absl::StatusOr<TraceFormat> DetectCsv(const Location& loc, absl::string_view line,
                                      const std::vector<CsvField>& header) {
  const CsvLayout* best = nullptr;
  int best_found = 0;
  for (const auto& layout : CsvLayouts()) {
    const int found = RequiredColumnsFound(layout, header);
    if (found > best_found) {
      best = &layout;
      best_found = found;
    }
  }
  // A header that holds the columns of two formats (or as many of two) is not guessed at.
  std::vector<std::string> also;
  for (const auto& layout : CsvLayouts()) {
    if (best == nullptr || &layout == best) continue;
    const int found = RequiredColumnsFound(layout, header);
    if (found == best_found || found >= std::min<int>(2, static_cast<int>(layout.required.size())))
      also.push_back(absl::StrCat(TraceFormatName(layout.format), " (", found, " of its columns)"));
  }
  if (best != nullptr && also.empty()) return best->format;
  if (best != nullptr)
    return RowError(loc, 1, "(header)",
                    absl::StrCat("expected the columns of one trace format, got ", TraceFormatName(best->format),
                                 " (", best_found, " of its columns) and ", absl::StrJoin(also, " and "),
                                 " in ", Quote(line), "; to choose one, pass --trace-format"));
  return RowError(loc, 1, "(header)",
                  absl::StrCat("expected a CSV header with TIMESTAMP,ContextTokens,GeneratedTokens "
                               "(azure), arrived_at,num_prefill_tokens,num_decode_tokens (vidur) or "
                               "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type "
                               "(burstgpt), or JSON objects (mooncake, jsonl), got ",
                               Quote(line), "; to force a format, pass --trace-format"));
}

}  // namespace dspark::sim::trace_internal
