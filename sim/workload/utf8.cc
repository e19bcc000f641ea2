#include "sim/workload/utf8.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dspark::sim {
namespace {

// Length of the well-formed UTF-8 sequence at text[pos], or 0 when there is none.
size_t SequenceLength(absl::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t b0 = byte(pos);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (pos + n > text.size()) return 0;
  if (byte(pos + 1) < lo || byte(pos + 1) > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (byte(pos + i) < 0x80 || byte(pos + i) > 0xBF) return 0;
  return n;
}

}  // namespace

size_t FirstInvalidUtf8(absl::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = SequenceLength(text, pos);
    if (n == 0) return pos;
    pos += n;
  }
  return absl::string_view::npos;
}

std::string EscapeInvalidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = SequenceLength(text, pos);
    if (n == 0) {
      absl::StrAppendFormat(&out, "\\x%02X", static_cast<uint8_t>(text[pos]));
      ++pos;
    } else {
      out.append(text.data() + pos, n);
      pos += n;
    }
  }
  return out;
}

absl::Status CheckArgsAreUtf8(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    const size_t bad = FirstInvalidUtf8(arg);
    if (bad == absl::string_view::npos) continue;
    return absl::InvalidArgumentError(absl::StrFormat(
        "argument %d ('%s'): expected UTF-8 text, got byte 0x%02X at offset %d", i,
        EscapeInvalidUtf8(arg.substr(0, 80)), static_cast<uint8_t>(arg[bad]), bad));
  }
  return absl::OkStatus();
}

absl::Status CheckTextIsUtf8(absl::string_view text, absl::string_view source) {
  const size_t bad = FirstInvalidUtf8(text);
  if (bad == absl::string_view::npos) return absl::OkStatus();
  const size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
  const size_t begin = line_start == absl::string_view::npos || bad == 0 ? 0 : line_start + 1;
  const int64_t line = 1 + std::count(text.begin(), text.begin() + begin, '\n');
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s:%d:%d: expected UTF-8 text, got byte 0x%02X", source, line,
      static_cast<int64_t>(bad - begin + 1), static_cast<uint8_t>(text[bad])));
}

}  // namespace dspark::sim
