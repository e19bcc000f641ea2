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
  return absl::OkStatus();
}

}  // namespace dspark::sim::trace_internal
