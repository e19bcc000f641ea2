#include "sim/workload/json_keys.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "sim/workload/input_file.h"

namespace dspark::sim {
namespace {

// The line of the n-th (1-based) occurrence of the quoted key `quoted` followed by ':' in `text`,
// or 0 when not found (a key written with other escapes than nlohmann's).
int64_t LineOfKey(absl::string_view text, const std::string& quoted, int n) {
  size_t at = 0;
  while (n > 0) {
    at = text.find(quoted, at);
    if (at == absl::string_view::npos) return 0;
    size_t after = at + quoted.size();
    while (after < text.size() && (text[after] == ' ' || text[after] == '\t' || text[after] == '\r' || text[after] == '\n'))
      ++after;
    if (after < text.size() && text[after] == ':') --n;
    if (n > 0) at += quoted.size();
  }
  return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
}

}  // namespace

absl::Status CheckJsonKeysOnce(absl::string_view text, absl::string_view path) {
  struct Frame {
    bool object = false;
    std::set<std::string> keys;
    std::string key;
  };
  std::vector<Frame> stack;
  std::map<std::string, int> times_seen;  // as a key anywhere, for the line of the repeat
  std::string repeated_path, repeated_key;
  int repeated_occurrence = 0;
  const auto note = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      stack.push_back(Frame{event == E::object_start, {}, {}});
    } else if (event == E::object_end || event == E::array_end) {
      if (!stack.empty()) stack.pop_back();
    } else if (event == E::key && !stack.empty()) {
      const std::string key = parsed.get<std::string>();
      const int n = ++times_seen[key];
      Frame& top = stack.back();
      top.key = key;
      if (repeated_key.empty() && !top.keys.insert(key).second) {
        repeated_key = key;
        repeated_occurrence = n;
        for (const Frame& f : stack) {
          if (f.object) absl::StrAppend(&repeated_path, repeated_path.empty() ? "" : ".", f.key);
          else absl::StrAppend(&repeated_path, "[]");
        }
      }
    }
    return true;
  };
  try {
    // Parsed only for the callback's walk over the keys; the value itself is not needed.
    const nlohmann::json walked = nlohmann::json::parse(text.begin(), text.end(), note);
    static_cast<void>(walked);
  } catch (const nlohmann::json::exception&) {
    return absl::OkStatus();  // the caller's own parse reports what is wrong
  }
  if (repeated_key.empty()) return absl::OkStatus();
  const int64_t line = LineOfKey(text, nlohmann::json(repeated_key).dump(), repeated_occurrence);
  return absl::InvalidArgumentError(absl::StrCat(path, line > 0 ? absl::StrCat(":", line) : "", ": ",
                                                 Abbreviate(repeated_path, 120),
                                                 ": expected each key once per object, got it twice"));
}

}  // namespace dspark::sim
