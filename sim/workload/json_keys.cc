#include "sim/workload/json_keys.h"

#include <algorithm>
#include <iterator>
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

namespace {

// Where the lexer is: the line of the last character it consumed. A number is ended by reading
// one character past it, so the character last consumed does not count toward the line: a
// newline right after a number leaves the number on its own line.
struct LexerLine {
  int64_t line = 1;
  bool last_was_newline = false;
};

// An input iterator over the text that keeps the LexerLine the SAX events below read.
class LineCountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  LineCountingIterator(const char* at, LexerLine* line) : at_(at), line_(line) {}
  reference operator*() const { return *at_; }
  LineCountingIterator& operator++() {
    if (line_->last_was_newline) ++line_->line;
    line_->last_was_newline = *at_ == '\n';
    ++at_;
    return *this;
  }
  LineCountingIterator operator++(int) {
    LineCountingIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const LineCountingIterator& o) const { return at_ == o.at_; }
  bool operator!=(const LineCountingIterator& o) const { return at_ != o.at_; }

 private:
  const char* at_;
  LexerLine* line_;
};

// Records the line of every value by its key path.
class LineSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  LineSax(const LexerLine* line, std::map<std::string, int64_t, std::less<>>* lines) : line_(line), lines_(lines) {}

  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override {
    Value();
    stack_.push_back(Frame{true, -1, Path()});
    return true;
  }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    f.key_path = f.prefix.empty() ? k : absl::StrCat(f.prefix, ".", k);
    (*lines_)[f.key_path] = line_->line;
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    Value();
    stack_.push_back(Frame{false, -1, Path()});
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct Frame {
    bool object;
    int64_t index;         // arrays: the element being read
    std::string prefix;    // the path of this object or array
    std::string key_path;  // objects: the path of the key being read
  };
  // The path of the value being read (for an object member, its key's; the line is the key's).
  std::string Path() const {
    if (stack_.empty()) return "";
    const Frame& f = stack_.back();
    return f.object ? f.key_path : absl::StrCat(f.prefix, "[", f.index, "]");
  }
  bool Value() {
    if (!stack_.empty() && !stack_.back().object) {
      ++stack_.back().index;
      (*lines_)[Path()] = line_->line;
    }
    return true;
  }

  const LexerLine* line_;
  std::map<std::string, int64_t, std::less<>>* lines_;
  std::vector<Frame> stack_;
};

}  // namespace

JsonLines JsonLines::Of(absl::string_view text) {
  JsonLines index;
  LexerLine line;
  LineSax sax(&line, &index.lines_);
  const bool ok = nlohmann::json::sax_parse(LineCountingIterator(text.data(), &line),
                                            LineCountingIterator(text.data() + text.size(), &line), &sax);
  if (!ok) index.lines_.clear();
  return index;
}

int64_t JsonLines::LineOf(absl::string_view key_path) const {
  const auto it = lines_.find(key_path);
  return it == lines_.end() ? 0 : it->second;
}

std::string JsonLines::Where(absl::string_view file, absl::string_view key_path) const {
  const int64_t line = LineOf(key_path);
  return line > 0 ? absl::StrCat(file, ":", line) : std::string(file);
}

}  // namespace dspark::sim
