// What the trace parsers share (sim/workload/trace*.cc): a row before its arrival is made
// relative, where it is in the file, the row errors and the per-format row parsers. Not part of
// the trace interface (trace.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "sim/workload/trace.h"

namespace dspark::sim::trace_internal {

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

// "SOURCE:LINE:COLUMN: field 'FIELD': WHAT" (InvalidArgument), UTF-8-safe.
absl::Status RowError(const Location& loc, int64_t column, absl::string_view field, absl::string_view what);
// Quotes a value for a message: at most 40 bytes, control bytes as \xNN so that a binary
// file cannot garble the terminal.
std::string Quote(absl::string_view s);
// An optional sign and decimal digits: integer syntax, whether or not it fits 64 bits.
bool IsIntegerText(absl::string_view s);
// "expected an integer in [MIN, MAX], got "
std::string RangeExpectation(int64_t min_value, int64_t max_value);

struct Line {
  absl::string_view text;  // without the line terminator ("\n" or "\r\n")
  int64_t number = 0;     // 1-based
};

// The lines of `text` (a UTF-8 byte-order mark dropped, CRLF ends cut).
std::vector<Line> SplitLines(absl::string_view text);

// The same lines one at a time, without a table of them.
class LineCursor {
 public:
  explicit LineCursor(absl::string_view text);
  bool Next(Line* line);  // false after the last line

 private:
  absl::string_view text_;
  size_t pos_ = 0;
  int64_t number_ = 0;
};
bool IsBlank(absl::string_view s);
// Faults of the file as a whole, before any line is read (UTF-16/32, gzip).
absl::Status CheckEncoding(absl::string_view text, absl::string_view source);

// ---- CSV (trace_csv.cc)

struct CsvField {
  absl::string_view text;  // trimmed of surrounding spaces
  int64_t column = 0;     // 1-based byte column of the field's first character
};

std::vector<CsvField> SplitCsv(absl::string_view line);

struct CsvLayout {
  TraceFormat format;
  std::vector<std::string> required;  // column names, in the order the row parser wants them
};

const CsvLayout& LayoutOf(TraceFormat format);

// Outcome of one data row: a request, a counted failure (BurstGPT), or an error.
enum class RowKind { kRequest, kFailedRequest, kOtherModel };

// One data row of a CSV format; `col` maps the layout's required columns to the header's.
absl::StatusOr<RowKind> ParseCsvRow(TraceFormat format, const Location& loc, const std::vector<CsvField>& fields,
                                    const std::vector<int>& col, RawRow* row);
// The layout with the most required columns in the header, so that a header with a typo in
// one column is reported as that column missing; an error when no column matches at all.
absl::StatusOr<TraceFormat> DetectCsv(const Location& loc, absl::string_view line,
                                      const std::vector<CsvField>& header);

// ---- JSONL (trace_jsonl.cc)

// 1-based column of `"key"` in the line, or 1 when the key is absent (the error is about the
// object as a whole then). `nth` > 1 finds a repeated key.
int64_t KeyColumn(absl::string_view line, absl::string_view key, int nth = 1);
// One JSON object per line; a repeated key is an error.
absl::Status ParseJsonObject(const Location& loc, absl::string_view line, nlohmann::json* obj);
absl::StatusOr<RowKind> ParseMooncakeRow(const Location& loc, absl::string_view line, RawRow* row,
                                         bool* has_hash_ids);
absl::StatusOr<RowKind> ParseOwnJsonlRow(const Location& loc, absl::string_view line, RawRow* row, bool* has_id);
// Mooncake (input_length) or this project's JSONL (prompt_len), from the first object.
absl::StatusOr<TraceFormat> DetectJson(const Location& loc, absl::string_view line);

}  // namespace dspark::sim::trace_internal
