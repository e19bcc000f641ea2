#include "sim/trace.h"

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
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "sim/utf8.h"

namespace dspark::sim {
namespace {

constexpr int kSkippedExamples = 10;

// A data row before arrival times are made relative: Azure gives absolute wall-clock times,
// whose integer seconds are kept apart from the fraction so no precision is lost.
struct RawRow {
  int64_t id = 0;
  int64_t whole_s = 0;   // [s] integer part of the arrival
  double frac_s = 0.0;   // [s] fractional part (or the whole value for relative formats)
  int32_t prompt_len = 0;
  int32_t output_len = 0;
  std::vector<double> acceptance;
};

struct Location {
  absl::string_view source;
  int64_t line = 0;  // 1-based
};

absl::Status RowError(const Location& loc, int64_t column, absl::string_view field,
                      absl::string_view what) {
  // Field names and quoted values come from the file, and the messages may go into JSON
  // (summary.json's skipped_examples, a sweep's failed row), which holds only UTF-8.
  return absl::InvalidArgumentError(absl::StrFormat("%s:%d:%d: field '%s': %s", loc.source,
                                                    loc.line, column, EscapeInvalidUtf8(field),
                                                    EscapeInvalidUtf8(what)));
}

std::string Quote(absl::string_view s) {
  constexpr size_t kMax = 40;
  if (s.size() > kMax) return absl::StrCat("'", s.substr(0, kMax), "...'");
  return absl::StrCat("'", s, "'");
}

// ---------------------------------------------------------------------------------------------
// Lines

struct Line {
  absl::string_view text;  // without the line terminator ("\n" or "\r\n")
  int64_t number = 0;     // 1-based
};

std::vector<Line> SplitLines(absl::string_view text) {
  std::vector<Line> lines;
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  int64_t number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == absl::string_view::npos) end = text.size();
    absl::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({line, ++number});
    pos = end + 1;
  }
  return lines;
}

bool IsBlank(absl::string_view s) { return absl::StripAsciiWhitespace(s).empty(); }

// ---------------------------------------------------------------------------------------------
// CSV

struct CsvField {
  absl::string_view text;  // trimmed of surrounding spaces
  int64_t column = 0;     // 1-based byte column of the field's first character
};

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

absl::StatusOr<int32_t> ParseTokens(const Location& loc, const CsvField& f, absl::string_view name,
                                    int32_t min_value) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(f.text, &v))
    return RowError(loc, f.column, name,
                    absl::StrCat("expected an integer token count, got ", Quote(f.text)));
  if (v < min_value || v > kMaxTraceTokens)
    return RowError(loc, f.column, name,
                    absl::StrFormat("expected an integer in [%d, %d], got %d", min_value,
                                    kMaxTraceTokens, v));
  return static_cast<int32_t>(v);
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
  return absl::OkStatus();
}

struct CsvLayout {
  TraceFormat format;
  std::vector<std::string> required;  // column names, in the order the row parser wants them
};

const std::vector<CsvLayout>& CsvLayouts() {
  static const auto* layouts = new std::vector<CsvLayout>{
      {TraceFormat::kAzure, {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}},
      {TraceFormat::kVidur, {"arrived_at", "num_prefill_tokens", "num_decode_tokens"}},
      {TraceFormat::kBurstGpt,
       {"Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"}},
  };
  return *layouts;
}

const CsvLayout& LayoutOf(TraceFormat format) {
  for (const auto& l : CsvLayouts())
    if (l.format == format) return l;
  return CsvLayouts().front();
}

// Outcome of one data row: a request, a counted failure (BurstGPT), or an error.
enum class RowKind { kRequest, kFailedRequest };

absl::StatusOr<RowKind> ParseCsvRow(TraceFormat format, const Location& loc,
                                    const std::vector<CsvField>& fields,
                                    const std::vector<int>& col, RawRow* row) {
  switch (format) {
    case TraceFormat::kAzure: {
      if (auto s = ParseAzureTimestamp(loc, fields[col[0]], row); !s.ok()) return s;
      auto prompt = ParseTokens(loc, fields[col[1]], "ContextTokens", 1);
      if (!prompt.ok()) return prompt.status();
      auto output = ParseTokens(loc, fields[col[2]], "GeneratedTokens", 1);
      if (!output.ok()) return output.status();
      row->prompt_len = *prompt;
      row->output_len = *output;
      return RowKind::kRequest;
    }
    case TraceFormat::kVidur: {
      auto t = ParseSeconds(loc, fields[col[0]], "arrived_at");
      if (!t.ok()) return t.status();
      auto prompt = ParseTokens(loc, fields[col[1]], "num_prefill_tokens", 1);
      if (!prompt.ok()) return prompt.status();
      auto output = ParseTokens(loc, fields[col[2]], "num_decode_tokens", 1);
      if (!output.ok()) return output.status();
      row->frac_s = *t;
      row->prompt_len = *prompt;
      row->output_len = *output;
      return RowKind::kRequest;
    }
    case TraceFormat::kBurstGpt: {
      auto t = ParseSeconds(loc, fields[col[0]], "Timestamp");
      if (!t.ok()) return t.status();
      if (fields[col[1]].text.empty())
        return RowError(loc, fields[col[1]].column, "Model", "expected a model name, got ''");
      auto prompt = ParseTokens(loc, fields[col[2]], "Request tokens", 1);
      if (!prompt.ok()) return prompt.status();
      auto output = ParseTokens(loc, fields[col[3]], "Response tokens", 0);
      if (!output.ok()) return output.status();
      int64_t total = 0;
      const CsvField& tf = fields[col[4]];
      if (!absl::SimpleAtoi(tf.text, &total) || total != int64_t{*prompt} + *output)
        return RowError(loc, tf.column, "Total tokens",
                        absl::StrFormat("expected Request tokens + Response tokens = %d, got %s",
                                        int64_t{*prompt} + *output, Quote(tf.text)));
      if (fields[col[5]].text.empty())
        return RowError(loc, fields[col[5]].column, "Log Type", "expected a log type, got ''");
      row->frac_s = *t;
      row->prompt_len = *prompt;
      row->output_len = *output;
      // A logged request with no response failed in the original service: it is not part of
      // the offered load that completed, and a zero-length output cannot be simulated.
      return *output == 0 ? RowKind::kFailedRequest : RowKind::kRequest;
    }
    default:
      return absl::InternalError("not a CSV format");
  }
}

// ---------------------------------------------------------------------------------------------
// JSONL

// 1-based column of `"key"` in the line, or 1 when the key is absent (the error is about the
// object as a whole then).
int64_t KeyColumn(absl::string_view line, absl::string_view key) {
  const size_t at = line.find(absl::StrCat("\"", key, "\""));
  return at == absl::string_view::npos ? 1 : static_cast<int64_t>(at + 1);
}

absl::StatusOr<int32_t> JsonTokens(const Location& loc, absl::string_view line,
                                   const nlohmann::json& obj, absl::string_view key,
                                   int32_t min_value) {
  const auto it = obj.find(std::string(key));
  if (it == obj.end())
    return RowError(loc, 1, key, "missing; expected an integer token count");
  if (!it->is_number_integer())
    return RowError(loc, KeyColumn(line, key), key,
                    absl::StrCat("expected an integer token count, got ", Quote(it->dump())));
  const int64_t v = it->is_number_unsigned()
                        ? static_cast<int64_t>(std::min<uint64_t>(it->get<uint64_t>(),
                                                                  uint64_t{1} << 62))
                        : it->get<int64_t>();
  if (v < min_value || v > kMaxTraceTokens)
    return RowError(loc, KeyColumn(line, key), key,
                    absl::StrFormat("expected an integer in [%d, %d], got %d", min_value,
                                    kMaxTraceTokens, v));
  return static_cast<int32_t>(v);
}

absl::StatusOr<double> JsonNonNegative(const Location& loc, absl::string_view line,
                                       const nlohmann::json& v, absl::string_view key,
                                       absl::string_view unit) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    return RowError(loc, KeyColumn(line, key), key,
                    absl::StrCat("expected a finite number of ", unit, " >= 0, got ",
                                 Quote(v.dump())));
  return v.get<double>();
}

absl::Status ParseJsonObject(const Location& loc, absl::string_view line, nlohmann::json* obj) {
  // nlohmann-json takes a NUL byte for the end of the input and would ignore the rest.
  if (const size_t nul = line.find('\0'); nul != absl::string_view::npos)
    return RowError(loc, static_cast<int64_t>(nul + 1), "(json)",
                    "expected one JSON object per line, got a NUL byte");
  try {
    *obj = nlohmann::json::parse(line.begin(), line.end());
  } catch (const nlohmann::json::parse_error& e) {
    return RowError(loc, static_cast<int64_t>(std::max<size_t>(e.byte, 1)), "(json)",
                    absl::StrCat("expected one JSON object per line: ", e.what()));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond double's range ("1e999"): the message quotes it, which locates it.
    const absl::string_view what = e.what();
    const size_t open = what.find("parsing '");
    const size_t at = open == absl::string_view::npos
                          ? absl::string_view::npos
                          : line.find(what.substr(open + 9, what.rfind('\'') - open - 9));
    return RowError(loc, at == absl::string_view::npos ? 1 : static_cast<int64_t>(at + 1), "(json)",
                    absl::StrCat("expected one JSON object per line: ", e.what()));
  }
  if (!obj->is_object())
    return RowError(loc, 1, "(json)", "expected a JSON object on each line");
  return absl::OkStatus();
}

absl::StatusOr<RowKind> ParseMooncakeRow(const Location& loc, absl::string_view line,
                                         RawRow* row) {
  nlohmann::json obj;
  if (auto s = ParseJsonObject(loc, line, &obj); !s.ok()) return s;
  const auto ts = obj.find("timestamp");
  if (ts == obj.end()) return RowError(loc, 1, "timestamp", "missing; expected milliseconds");
  auto ms = JsonNonNegative(loc, line, *ts, "timestamp", "milliseconds");
  if (!ms.ok()) return ms.status();
  auto prompt = JsonTokens(loc, line, obj, "input_length", 1);
  if (!prompt.ok()) return prompt.status();
  auto output = JsonTokens(loc, line, obj, "output_length", 1);
  if (!output.ok()) return output.status();
  row->frac_s = *ms / 1000.0;
  row->prompt_len = *prompt;
  row->output_len = *output;
  return RowKind::kRequest;
}

absl::StatusOr<RowKind> ParseOwnJsonlRow(const Location& loc, absl::string_view line,
                                         RawRow* row, bool* has_id) {
  nlohmann::json obj;
  if (auto s = ParseJsonObject(loc, line, &obj); !s.ok()) return s;
  static const absl::flat_hash_set<std::string>* known = new absl::flat_hash_set<std::string>{
      "id", "arrival_s", "prompt_len", "output_len", "acceptance"};
  for (const auto& [key, value] : obj.items())
    if (!known->contains(key))
      return RowError(loc, KeyColumn(line, key), key,
                      "unknown key; expected id, arrival_s, prompt_len, output_len, acceptance");
  *has_id = false;
  if (const auto it = obj.find("id"); it != obj.end()) {
    if (!it->is_number_integer() || (!it->is_number_unsigned() && it->get<int64_t>() < 0))
      return RowError(loc, KeyColumn(line, "id"), "id",
                      absl::StrCat("expected an integer >= 0, got ", Quote(it->dump())));
    row->id = it->get<int64_t>();
    *has_id = true;
  }
  if (const auto it = obj.find("arrival_s"); it != obj.end()) {
    auto t = JsonNonNegative(loc, line, *it, "arrival_s", "seconds");
    if (!t.ok()) return t.status();
    row->frac_s = *t;
  }
  auto prompt = JsonTokens(loc, line, obj, "prompt_len", 1);
  if (!prompt.ok()) return prompt.status();
  auto output = JsonTokens(loc, line, obj, "output_len", 1);
  if (!output.ok()) return output.status();
  row->prompt_len = *prompt;
  row->output_len = *output;
  if (const auto it = obj.find("acceptance"); it != obj.end()) {
    const int64_t col = KeyColumn(line, "acceptance");
    if (!it->is_array() || it->empty() || it->size() > kMaxAcceptanceProfile)
      return RowError(loc, col, "acceptance",
                      absl::StrFormat("expected an array of 1 to %d probabilities, got %s",
                                      kMaxAcceptanceProfile, Quote(it->dump())));
    for (size_t i = 0; i < it->size(); ++i) {
      const auto& p = (*it)[i];
      if (!p.is_number() || !(p.get<double>() >= 0.0 && p.get<double>() <= 1.0))
        return RowError(loc, col, "acceptance",
                        absl::StrFormat("expected element %d to be a probability in [0, 1], got %s",
                                        i, Quote(p.dump())));
      row->acceptance.push_back(p.get<double>());
    }
  }
  return RowKind::kRequest;
}

// ---------------------------------------------------------------------------------------------
// Format detection

absl::StatusOr<TraceFormat> DetectCsv(const Location& loc, const std::vector<CsvField>& header) {
  for (const auto& layout : CsvLayouts()) {
    bool all = true;
    for (const auto& name : layout.required) {
      bool found = false;
      for (const auto& f : header) found |= f.text == name;
      all &= found;
    }
    if (all) return layout.format;
  }
  return RowError(loc, 1, "(header)",
                  "expected a CSV header with TIMESTAMP,ContextTokens,GeneratedTokens (azure), "
                  "arrived_at,num_prefill_tokens,num_decode_tokens (vidur) or Timestamp,Model,"
                  "Request tokens,Response tokens,Total tokens,Log Type (burstgpt), or JSON "
                  "objects (mooncake, jsonl); or pass --trace-format");
}

absl::StatusOr<TraceFormat> DetectJson(const Location& loc, absl::string_view line) {
  nlohmann::json obj;
  if (auto s = ParseJsonObject(loc, line, &obj); !s.ok()) return s;
  if (obj.contains("input_length")) return TraceFormat::kMooncake;
  if (obj.contains("prompt_len")) return TraceFormat::kJsonl;
  return RowError(loc, 1, "(format)",
                  "expected 'input_length' (mooncake) or 'prompt_len' (jsonl) in the first object");
}

bool IsCsvFormat(TraceFormat f) {
  return f == TraceFormat::kAzure || f == TraceFormat::kVidur || f == TraceFormat::kBurstGpt;
}

}  // namespace

absl::string_view TraceFormatName(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAuto: return "auto";
    case TraceFormat::kAzure: return "azure";
    case TraceFormat::kVidur: return "vidur";
    case TraceFormat::kBurstGpt: return "burstgpt";
    case TraceFormat::kMooncake: return "mooncake";
    case TraceFormat::kJsonl: return "jsonl";
  }
  return "?";
}

absl::StatusOr<TraceFormat> ParseTraceFormat(absl::string_view name) {
  for (TraceFormat f : {TraceFormat::kAuto, TraceFormat::kAzure, TraceFormat::kVidur,
                        TraceFormat::kBurstGpt, TraceFormat::kMooncake, TraceFormat::kJsonl})
    if (name == TraceFormatName(f)) return f;
  return absl::InvalidArgumentError(absl::StrCat(
      "--trace-format: expected auto, azure, vidur, burstgpt, mooncake or jsonl, got '", name,
      "'"));
}

absl::StatusOr<Trace> ParseTrace(absl::string_view text, absl::string_view source,
                                 const TraceOptions& options) {
  Trace trace;
  trace.source = std::string(source);
  const std::vector<Line> lines = SplitLines(text);
  size_t first = 0;
  while (first < lines.size() && IsBlank(lines[first].text)) ++first;
  if (first == lines.size())
    return absl::InvalidArgumentError(absl::StrCat(source, ": empty trace (no header, no rows)"));
  const Location first_loc{source, lines[first].number};
  const bool looks_json = absl::StripLeadingAsciiWhitespace(lines[first].text).substr(0, 1) == "{";

  TraceFormat format = options.format;
  if (format == TraceFormat::kAuto) {
    absl::StatusOr<TraceFormat> detected =
        looks_json ? DetectJson(first_loc, lines[first].text)
                   : DetectCsv(first_loc, SplitCsv(lines[first].text));
    if (!detected.ok()) return detected.status();
    format = *detected;
  }
  trace.format = format;

  // CSV: map required column names to positions in the header.
  std::vector<int> col;
  size_t header_fields = 0;
  size_t data_begin = first;
  if (IsCsvFormat(format)) {
    const std::vector<CsvField> header = SplitCsv(lines[first].text);
    header_fields = header.size();
    for (const auto& name : LayoutOf(format).required) {
      int at = -1;
      for (size_t i = 0; i < header.size(); ++i)
        if (header[i].text == name) at = static_cast<int>(i);
      if (at < 0)
        return RowError(first_loc, 1, name,
                        absl::StrCat("missing from the header; a ", TraceFormatName(format),
                                     " trace needs columns ",
                                     absl::StrJoin(LayoutOf(format).required, ",")));
      col.push_back(at);
    }
    data_begin = first + 1;
  } else if (!looks_json) {
    return RowError(first_loc, 1, "(format)",
                    absl::StrCat("expected JSON objects for a ", TraceFormatName(format),
                                 " trace, got ", Quote(lines[first].text)));
  }

  std::vector<RawRow> rows;
  rows.reserve(lines.size());
  absl::flat_hash_map<int64_t, int64_t> id_line;  // jsonl: explicit id -> line, for duplicates
  int64_t next_index = 0;
  for (size_t i = data_begin; i < lines.size(); ++i) {
    const Line& line = lines[i];
    if (IsBlank(line.text)) continue;
    ++trace.data_rows;
    const Location loc{source, line.number};
    RawRow row;
    row.id = next_index;
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
      kind = ParseMooncakeRow(loc, line.text, &row);
    } else {
      bool has_id = false;
      kind = ParseOwnJsonlRow(loc, line.text, &row, &has_id);
      if (kind.ok() && has_id) {
        auto [it, inserted] = id_line.emplace(row.id, line.number);
        if (!inserted)
          kind = RowError(loc, KeyColumn(line.text, "id"), "id",
                          absl::StrFormat("expected a unique id; %d is already used on line %d",
                                          row.id, it->second));
      }
    }
    if (!kind.ok()) {
      if (!options.skip_bad_rows) return kind.status();
      ++trace.skipped_rows;
      if (trace.skipped_examples.size() < kSkippedExamples)
        trace.skipped_examples.push_back(std::string(kind.status().message()));
      continue;
    }
    ++next_index;
    if (*kind == RowKind::kFailedRequest) {
      ++trace.failed_requests;
      continue;
    }
    rows.push_back(std::move(row));
  }

  // Rows without an explicit id got their row index; in a jsonl trace mixing both, an index
  // may collide with an explicit id.
  if (format == TraceFormat::kJsonl && !id_line.empty() && id_line.size() != rows.size())
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": field 'id': expected every row or no row to carry an id"));

  if (!rows.empty()) {
    int64_t base_whole = rows.front().whole_s;
    double base_frac = rows.front().frac_s;
    for (const auto& r : rows)
      if (r.whole_s < base_whole || (r.whole_s == base_whole && r.frac_s < base_frac)) {
        base_whole = r.whole_s;
        base_frac = r.frac_s;
      }
    trace.requests.reserve(rows.size());
    for (auto& r : rows) {
      RequestSpec spec;
      spec.id = r.id;
      spec.arrival_s = static_cast<double>(r.whole_s - base_whole) + (r.frac_s - base_frac);
      spec.prompt_len = r.prompt_len;
      spec.output_len = r.output_len;
      spec.acceptance = std::move(r.acceptance);
      trace.requests.push_back(std::move(spec));
    }
    std::stable_sort(trace.requests.begin(), trace.requests.end(),
                     [](const RequestSpec& a, const RequestSpec& b) {
                       return a.arrival_s != b.arrival_s ? a.arrival_s < b.arrival_s : a.id < b.id;
                     });
  }
  return trace;
}

absl::StatusOr<Trace> LoadTrace(const std::string& path, const TraceOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("--trace: cannot open '", path, "'"));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("--trace: error reading '", path, "'"));
  return ParseTrace(buf.str(), path, options);
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
