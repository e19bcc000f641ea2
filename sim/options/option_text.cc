#include "sim/options/option_text.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "sim/workload/utf8.h"

namespace dspark::sim {
namespace {

// Every substitution key of Boost 1.74's error classes (errors.hpp, value_semantic.cpp).
constexpr absl::string_view kPlaceholders[] = {"%canonical_option%", "%invalid_line%",
                                               "%option%",           "%original_token%",
                                               "%prefix%",           "%value%"};

// Offset and text of the first placeholder in `text`, or npos.
size_t FindPlaceholder(absl::string_view text, absl::string_view* which) {
  size_t first = absl::string_view::npos;
  for (absl::string_view p : kPlaceholders) {
    const size_t at = text.find(p);
    if (at < first) {
      first = at;
      *which = p;
    }
  }
  return first;
}

constexpr char kWhy[] =
    "Boost.Program_options cannot report an error about such text: it loops forever";

}  // namespace

absl::Status CheckOptionArgs(int argc, char** argv) {
  if (absl::Status s = CheckArgsAreUtf8(argc, argv); !s.ok()) return s;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    absl::string_view which;
    if (FindPlaceholder(arg, &which) == absl::string_view::npos) continue;
    return absl::InvalidArgumentError(absl::StrFormat(
        "argument %d ('%s'): expected no '%s' (%s)", i, arg.substr(0, 80), which, kWhy));
  }
  return absl::OkStatus();
}

absl::Status CheckOptionFile(absl::string_view text, absl::string_view source) {
  if (absl::Status s = CheckTextIsUtf8(text, source); !s.ok()) return s;
  absl::string_view which;
  const size_t at = FindPlaceholder(text, &which);
  if (at == absl::string_view::npos) return absl::OkStatus();
  const size_t newline = at == 0 ? absl::string_view::npos : text.rfind('\n', at - 1);
  const size_t line_start = newline == absl::string_view::npos ? 0 : newline + 1;
  const int64_t line = 1 + std::count(text.begin(), text.begin() + line_start, '\n');
  return absl::InvalidArgumentError(absl::StrFormat("%s:%d:%d: expected no '%s' (%s)", source, line,
                                                    static_cast<int64_t>(at - line_start + 1),
                                                    which, kWhy));
}

}  // namespace dspark::sim
