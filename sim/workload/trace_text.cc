// The trace parsers' row errors, quoting and lines (trace_internal.h).
#include "sim/workload/trace_internal.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/workload/utf8.h"

namespace dspark::sim::trace_internal {

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

LineCursor::LineCursor(absl::string_view text) : text_(text) {
  if (text_.size() >= 3 && text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);
}

bool LineCursor::Next(Line* line) {
  if (pos_ >= text_.size()) return false;
  size_t end = text_.find('\n', pos_);
  if (end == absl::string_view::npos) end = text_.size();
  absl::string_view text = text_.substr(pos_, end - pos_);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  *line = {text, ++number_};
  pos_ = end + 1;
  return true;
}

bool IsBlank(absl::string_view s) { return absl::StripAsciiWhitespace(s).empty(); }

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
  // The other compressed formats and archives a trace is shipped in, by their magic numbers.
  struct Magic {
    absl::string_view bytes, what, tool;
  };
  static constexpr Magic kMagics[] = {
      {absl::string_view("\x28\xB5\x2F\xFD", 4), "zstd-compressed data", "zstd -d"},
      {absl::string_view("\xFD" "7zXZ\x00", 6), "xz-compressed data", "xz -d"},
      {absl::string_view("\x04\x22\x4D\x18", 4), "lz4-compressed data", "lz4 -d"},
      {absl::string_view("PK\x03\x04", 4), "a zip archive", "unzip"},
      {absl::string_view("7z\xBC\xAF\x27\x1C", 6), "a 7-Zip archive", "7z x"},
      {absl::string_view("\x89" "HDF\r\n\x1A\n", 8), "an HDF5 file", ""},
      {absl::string_view("PAR1", 4), "a Parquet file", ""},
  };
  for (const Magic& m : kMagics)
    if (absl::StartsWith(text, m.bytes))
      return RowError(start, 1, "(encoding)",
                      absl::StrCat("expected a text trace, got ", m.what,
                                   m.tool.empty() ? "; convert it to CSV or JSONL first"
                                                  : absl::StrCat("; decompress it first (", m.tool, ")")));
  // bzip2: "BZh", the block size 1-9, then a block's or the end's magic.
  if (text.size() >= 10 && absl::StartsWith(text, "BZh") && text[3] >= '1' && text[3] <= '9' &&
      (text.substr(4, 6) == "1AY&SY" || text.substr(4, 6) == absl::string_view("\x17rE8P\x90", 6)))
    return RowError(start, 1, "(encoding)",
                    "expected a text trace, got bzip2-compressed data; decompress it first (bzip2 -d)");
  return absl::OkStatus();
}

}  // namespace dspark::sim::trace_internal
