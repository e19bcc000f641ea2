// The JSON-lines trace formats: Mooncake and this project's JSONL (trace_internal.h).
#include "sim/workload/trace_internal.h"

#include <cmath>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dspark::sim::trace_internal {

int64_t KeyColumn(absl::string_view line, absl::string_view key, int nth) {
  const std::string quoted = absl::StrCat("\"", key, "\"");
  size_t at = line.find(quoted);
  for (int i = 1; i < nth && at != absl::string_view::npos; ++i) at = line.find(quoted, at + 1);
  return at == absl::string_view::npos ? 1 : static_cast<int64_t>(at + 1);
}

namespace {

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

}  // namespace

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

absl::StatusOr<TraceFormat> DetectJson(const Location& loc, absl::string_view line) {
  nlohmann::json obj;
  if (auto s = ParseJsonObject(loc, line, &obj); !s.ok()) return s;
  if (obj.contains("input_length") && obj.contains("prompt_len"))
    return RowError(loc, 1, "(format)",
                    "expected the keys of one trace format, got 'input_length' (mooncake) and 'prompt_len' "
                    "(jsonl) in the first object; to choose one, pass --trace-format");
  if (obj.contains("input_length")) return TraceFormat::kMooncake;
  if (obj.contains("prompt_len")) return TraceFormat::kJsonl;
  return RowError(loc, 1, "(format)",
                  "expected 'input_length' (mooncake) or 'prompt_len' (jsonl) in the first object");
}

}  // namespace dspark::sim::trace_internal
