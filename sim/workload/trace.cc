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
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "sim/workload/utf8.h"
#include "sim/workload/input_file.h"

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
  int64_t time_column = 1;    // 1-based column of the arrival field, for order errors
  std::string time_text;      // the arrival field as written, for order errors
  int64_t prompt_column = 1;  // 1-based column of the prompt length, for max_model_len errors
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

// Quotes a value for a message: at most 40 bytes, control bytes as \xNN so that a binary
// file cannot garble the terminal.
std::string Quote(absl::string_view s) {
  constexpr size_t kMax = 40;
  std::string out = "'";
  for (const char c : s.substr(0, kMax)) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F)
      absl::StrAppendFormat(&out, "\\x%02X", u);
    else
      out.push_back(c);
  }
  return absl::StrCat(out, s.size() > kMax ? "...'" : "'");
}

// An optional sign and decimal digits: integer syntax, whether or not it fits 64 bits.
bool IsIntegerText(absl::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s)
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string RangeExpectation(int64_t min_value, int64_t max_value) {
  return absl::StrFormat("expected an integer in [%d, %d], got ", min_value, max_value);
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
  if (format == TraceFormat::kBurstGptLengths) format = TraceFormat::kBurstGpt;
  for (const auto& l : CsvLayouts())
    if (l.format == format) return l;
  return CsvLayouts().front();
}

// Outcome of one data row: a request, a counted failure (BurstGPT), or an error.
enum class RowKind { kRequest, kFailedRequest, kOtherModel };

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
      row->prompt_column = fields[col[1]].column;
      return RowKind::kRequest;
    }
    case TraceFormat::kVidur: {
      // A length-only CSV (no arrived_at column, col[0] < 0) arrives at 0; the run re-times it.
      absl::StatusOr<double> t = 0.0;
      if (col[0] >= 0) t = ParseSeconds(loc, fields[col[0]], "arrived_at");
      if (!t.ok()) return t.status();
      auto prompt = ParseTokens(loc, fields[col[1]], "num_prefill_tokens", 1);
      if (!prompt.ok()) return prompt.status();
      auto output = ParseTokens(loc, fields[col[2]], "num_decode_tokens", 1);
      if (!output.ok()) return output.status();
      row->frac_s = *t;
      row->prompt_len = *prompt;
      row->output_len = *output;
      row->time_column = col[0] >= 0 ? fields[col[0]].column : 1;
      row->time_text = col[0] >= 0 ? std::string(fields[col[0]].text) : "0 (no arrived_at)";
      row->prompt_column = fields[col[1]].column;
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
      row->time_column = fields[col[0]].column;
      row->time_text = lengths_only ? "0 (lengths only)" : std::string(fields[col[0]].text);
      row->prompt_column = fields[col[2]].column;
      // A logged request with no response failed in the original service: it is not part of
      // the offered load that completed, and a zero-length output cannot be simulated.
      if (*output == 0) return RowKind::kFailedRequest;
      // vLLM's BurstGPTDataset.load_data(): df[df["Model"] == "GPT-4"].
      if (lengths_only && fields[col[1]].text != "GPT-4") return RowKind::kOtherModel;
      return RowKind::kRequest;
    }
    default:
      return absl::InternalError("not a CSV format");
  }
}

// ---------------------------------------------------------------------------------------------
// JSONL

// 1-based column of `"key"` in the line, or 1 when the key is absent (the error is about the
// object as a whole then). `nth` > 1 finds a repeated key.
int64_t KeyColumn(absl::string_view line, absl::string_view key, int nth = 1) {
  const std::string quoted = absl::StrCat("\"", key, "\"");
  size_t at = line.find(quoted);
  for (int i = 1; i < nth && at != absl::string_view::npos; ++i) at = line.find(quoted, at + 1);
  return at == absl::string_view::npos ? 1 : static_cast<int64_t>(at + 1);
}

// The value of `key` as written in the line (for numbers: before the JSON parser rounded or
// widened it), or "" when it cannot be found.
absl::string_view RawValue(absl::string_view line, absl::string_view key) {
  const int64_t column = KeyColumn(line, key);
  if (column == 1 && !absl::StartsWith(line, absl::StrCat("\"", key, "\""))) return "";
  size_t i = static_cast<size_t>(column - 1) + key.size() + 2;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == ':')) ++i;
  size_t end = i;
  while (end < line.size() && line[end] != ',' && line[end] != '}' && line[end] != ']' &&
         line[end] != ' ' && line[end] != '\t')
    ++end;
  return line.substr(i, end - i);
}

// A number as the file wrote it, else the parsed value's JSON text.
std::string ValueText(absl::string_view line, absl::string_view key, const nlohmann::json& v) {
  const absl::string_view raw = RawValue(line, key);
  return v.is_number() && !raw.empty() ? std::string(raw) : v.dump();
}

// An integer field in [min_value, max_value]. The JSON parser stores integers beyond 64 bits
// as doubles: a double that large is a range error (never wrapped or clamped), any other
// non-integer a type error.
absl::StatusOr<int64_t> JsonInteger(const Location& loc, absl::string_view line,
                                    const nlohmann::json& v, absl::string_view key,
                                    absl::string_view what, int64_t min_value, int64_t max_value) {
  const std::string text = ValueText(line, key, v);
  const int64_t col = KeyColumn(line, key);
  const bool beyond_64_bits = v.is_number_float() && std::abs(v.get<double>()) >= 0x1p63;
  if (!v.is_number_integer() && !beyond_64_bits)
    return RowError(loc, col, key, absl::StrCat("expected ", what, ", got ", Quote(text)));
  // Non-negative integers come as uint64, which may exceed int64.
  const bool in_range =
      v.is_number_unsigned()
          ? v.get<uint64_t>() <= static_cast<uint64_t>(max_value) &&
                static_cast<int64_t>(v.get<uint64_t>()) >= min_value
          : v.is_number_integer() && v.get<int64_t>() >= min_value && v.get<int64_t>() <= max_value;
  if (!in_range)
    return RowError(loc, col, key,
                    absl::StrCat(RangeExpectation(min_value, max_value), Abbreviate(text)));
  return v.get<int64_t>();
}

absl::StatusOr<int32_t> JsonTokens(const Location& loc, absl::string_view line,
                                   const nlohmann::json& obj, absl::string_view key,
                                   int32_t min_value) {
  const auto it = obj.find(std::string(key));
  if (it == obj.end())
    return RowError(loc, 1, key, "missing; expected an integer token count");
  auto v = JsonInteger(loc, line, *it, key, "an integer token count", min_value, kMaxTraceTokens);
  if (!v.ok()) return v.status();
  return static_cast<int32_t>(*v);
}

absl::StatusOr<double> JsonNonNegative(const Location& loc, absl::string_view line,
                                       const nlohmann::json& v, absl::string_view key,
                                       absl::string_view unit) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    return RowError(loc, KeyColumn(line, key), key,
                    absl::StrCat("expected a finite number of ", unit, " >= 0, got ",
                                 Quote(ValueText(line, key, v))));
  return v.get<double>();
}

// nlohmann's what() without its "[json.exception.parse_error.101] parse error at line 1,
// column 18: " prefix: the location is already in the message.
std::string JsonReason(const nlohmann::json::exception& e) {
  absl::string_view what = e.what();
  if (const size_t close = what.find("] "); absl::StartsWith(what, "[") && close != what.npos)
    what.remove_prefix(close + 2);
  if (absl::StartsWith(what, "parse error at line ")) {
    const size_t colon = what.find(": ");
    if (colon != what.npos) what.remove_prefix(colon + 2);
  }
  return std::string(what);
}

absl::Status ParseJsonObject(const Location& loc, absl::string_view line, nlohmann::json* obj) {
  // nlohmann-json takes a NUL byte for the end of the input and would ignore the rest.
  if (const size_t nul = line.find('\0'); nul != absl::string_view::npos)
    return RowError(loc, static_cast<int64_t>(nul + 1), "(json)",
                    "expected one JSON object per line, got a NUL byte");
  // Top-level keys in order of appearance: the parser keeps only the last of a repeated key.
  std::vector<std::string> keys;
  std::string repeated;
  const auto note_key = [&](int depth, nlohmann::json::parse_event_t event,
                            nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && repeated.empty()) {
      const std::string key = parsed.get<std::string>();
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) repeated = key;
      keys.push_back(key);
    }
    return true;
  };
  try {
    *obj = nlohmann::json::parse(line.begin(), line.end(), note_key);
  } catch (const nlohmann::json::parse_error& e) {
    return RowError(loc, static_cast<int64_t>(std::max<size_t>(e.byte, 1)), "(json)",
                    absl::StrCat("expected one JSON object per line: ", JsonReason(e)));
  } catch (const nlohmann::json::exception& e) {
    // Number overflow (1e400) and the like: no byte offset; point at the number when found.
    const std::string reason = JsonReason(e);
    int64_t column = 1;
    const size_t open = reason.find('\''), close = reason.rfind('\'');
    if (open != std::string::npos && close > open) {
      const size_t at = line.find(reason.substr(open + 1, close - open - 1));
      if (at != absl::string_view::npos) column = static_cast<int64_t>(at + 1);
    }
    return RowError(loc, column, "(json)", absl::StrCat("expected one JSON object per line: ", reason));
  }
  if (!obj->is_object())
    return RowError(loc, 1, "(json)", "expected a JSON object on each line");
  if (!repeated.empty())
    return RowError(loc, KeyColumn(line, repeated, 2), repeated,
                    "expected each key once per object, got it twice");
  return absl::OkStatus();
}

absl::StatusOr<RowKind> ParseMooncakeRow(const Location& loc, absl::string_view line,
                                         RawRow* row, bool* has_hash_ids) {
  nlohmann::json obj;
  if (auto s = ParseJsonObject(loc, line, &obj); !s.ok()) return s;
  *has_hash_ids = *has_hash_ids || obj.contains("hash_ids");
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
  row->time_column = KeyColumn(line, "timestamp");
  row->time_text = ValueText(line, "timestamp", *ts);
  row->prompt_column = KeyColumn(line, "input_length");
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
    auto id = JsonInteger(loc, line, *it, "id", "an integer id", 0,
                          std::numeric_limits<int64_t>::max());
    if (!id.ok()) return id.status();
    row->id = *id;
    *has_id = true;
  }
  row->time_text = "0 (no arrival_s)";
  if (const auto it = obj.find("arrival_s"); it != obj.end()) {
    auto t = JsonNonNegative(loc, line, *it, "arrival_s", "seconds");
    if (!t.ok()) return t.status();
    row->frac_s = *t;
    row->time_column = KeyColumn(line, "arrival_s");
    row->time_text = ValueText(line, "arrival_s", *it);
  }
  auto prompt = JsonTokens(loc, line, obj, "prompt_len", 1);
  if (!prompt.ok()) return prompt.status();
  auto output = JsonTokens(loc, line, obj, "output_len", 1);
  if (!output.ok()) return output.status();
  row->prompt_len = *prompt;
  row->output_len = *output;
  row->prompt_column = KeyColumn(line, "prompt_len");
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

// The layout with the most required columns in the header, so that a header with a typo in
// one column is reported as that column missing; an error when no column matches at all.
absl::StatusOr<TraceFormat> DetectCsv(const Location& loc, absl::string_view line,
                                      const std::vector<CsvField>& header) {
  const CsvLayout* best = nullptr;
  int best_found = 0;
  for (const auto& layout : CsvLayouts()) {
    int found = 0;
    for (const auto& name : layout.required)
      for (const auto& f : header)
        if (f.text == name) {
          ++found;
          break;
        }
    if (found > best_found) {
      best = &layout;
      best_found = found;
    }
  }
  if (best != nullptr) return best->format;
  return RowError(loc, 1, "(header)",
                  absl::StrCat("expected a CSV header with TIMESTAMP,ContextTokens,GeneratedTokens "
                               "(azure), arrived_at,num_prefill_tokens,num_decode_tokens (vidur) or "
                               "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type "
                               "(burstgpt), or JSON objects (mooncake, jsonl), got ",
                               Quote(line), "; to force a format, pass --trace-format"));
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

// Faults of the file as a whole, before any line is read.
absl::Status CheckEncoding(absl::string_view text, absl::string_view source) {
  const Location start{source, 1};
  // UTF-32LE's mark begins with UTF-16LE's, so it is tested first.
  if (absl::StartsWith(text, absl::string_view("\xFF\xFE\0\0", 4)) ||
      absl::StartsWith(text, absl::string_view("\0\0\xFE\xFF", 4)))
    return RowError(start, 1, "(encoding)",
                    "expected UTF-8 text, got a UTF-32 byte-order mark; convert the file "
                    "(iconv -f UTF-32 -t UTF-8)");
  if (absl::StartsWith(text, "\xFF\xFE") || absl::StartsWith(text, "\xFE\xFF"))
    return RowError(start, 1, "(encoding)",
                    "expected UTF-8 text, got a UTF-16 byte-order mark; convert the file "
                    "(iconv -f UTF-16 -t UTF-8)");
  if (absl::StartsWith(text, "\x1F\x8B"))
    return RowError(start, 1, "(encoding)",
                    "expected a text trace, got gzip-compressed data; decompress it first");
  return absl::OkStatus();
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
  const std::vector<Line> lines = SplitLines(text);
  // No format quotes fields and JSON escapes control characters, so a CR left inside a line
  // means the file ends its lines in bare CR: read as one line it would mislead every message.
  for (const Line& line : lines)
    if (const size_t cr = line.text.find('\r'); cr != absl::string_view::npos)
      return RowError({source, line.number}, static_cast<int64_t>(cr + 1), "(line)",
                      "expected lines ending in LF or CRLF, got a bare CR (carriage return) "
                      "inside the line");
  size_t first = 0;
  while (first < lines.size() && IsBlank(lines[first].text)) ++first;
  if (first == lines.size()) {
    const char* expected = options.format == TraceFormat::kAuto ? "a CSV header or a JSON object"
                           : IsCsvFormat(options.format)        ? "a CSV header"
                                                                : "a JSON object";
    return RowError({source, 1}, 1, "(file)",
                    absl::StrCat("expected ", expected, " on the first non-blank line, got ",
                                 lines.empty() ? "an empty file" : "only blank lines"));
  }
  const Location first_loc{source, lines[first].number};
  const bool looks_json = absl::StripLeadingAsciiWhitespace(lines[first].text).substr(0, 1) == "{";

  TraceFormat format = options.format;
  if (format == TraceFormat::kAuto) {
    absl::StatusOr<TraceFormat> detected =
        looks_json ? DetectJson(first_loc, lines[first].text)
                   : DetectCsv(first_loc, lines[first].text, SplitCsv(lines[first].text));
    if (!detected.ok()) return detected.status();
    format = *detected;
  }
  trace.format = format;
  if (format == TraceFormat::kBurstGptLengths) trace.has_arrivals = false;

  // CSV: map required column names to positions in the header.
  std::vector<int> col;
  size_t header_fields = 0;
  size_t data_begin = first;
  if (IsCsvFormat(format)) {
    const std::vector<CsvField> header = SplitCsv(lines[first].text);
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
    data_begin = first + 1;
  } else if (!looks_json) {
    return RowError(first_loc, 1, "(format)",
                    absl::StrCat("expected JSON objects for a ", TraceFormatName(format),
                                 " trace, got ", Quote(lines[first].text)));
  }

  std::optional<Arrival> last, first_time;
  std::vector<RawRow> rows;
  rows.reserve(lines.size());
  absl::flat_hash_map<int64_t, int64_t> id_line;  // jsonl: explicit id -> line, for duplicates
  std::optional<bool> ids_given;  // jsonl: whether the first accepted row carried an id
  int64_t ids_decided_line = 0;
  int64_t next_index = 0;
  for (size_t i = data_begin; i < lines.size(); ++i) {
    const Line& line = lines[i];
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
    rows.push_back(std::move(row));
  }

  if (trace.data_rows == 0)
    return RowError({source, lines[first].number + 1}, 1, "(rows)",
                    "expected at least one data row after the header, got none");
  if (rows.empty())
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected at least one request, got none (data rows: %d, skipped as bad: %d, failed "
        "requests with 0 response tokens: %d%s)",
        source, trace.data_rows, trace.skipped_rows, trace.failed_requests,
        format == TraceFormat::kBurstGptLengths
            ? absl::StrCat(", rows of a model other than GPT-4: ", trace.other_models_excluded)
            : ""));

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
