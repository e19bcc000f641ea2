#include "sim/options/option_errors.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/workload/input_file.h"

namespace dspark::sim {
namespace po = boost::program_options;

namespace {

// What a value of the option must look like, from the C++ type boost converts it to.
std::string ExpectedValue(const po::options_description& desc, absl::string_view name) {
  const std::string key(absl::StripPrefix(name, "--"));
  const po::option_description* option = desc.find_nothrow(key, false);
  if (option == nullptr) return "";
  const po::value_semantic* semantic = option->semantic().get();
  if (dynamic_cast<const po::typed_value<int32_t>*>(semantic) != nullptr)
    return "an integer in [-2147483648, 2147483647]";
  if (dynamic_cast<const po::typed_value<int64_t>*>(semantic) != nullptr)
    return "an integer in [-9223372036854775808, 9223372036854775807]";
  if (dynamic_cast<const po::typed_value<uint64_t>*>(semantic) != nullptr)
    return "an integer in [0, 18446744073709551615]";
  if (dynamic_cast<const po::typed_value<double>*>(semantic) != nullptr) return "a number";
  if (dynamic_cast<const po::typed_value<bool>*>(semantic) != nullptr)
    return "true, false, yes, no, on, off, 1 or 0";
  return "";
}

// The value boost quotes in "the argument ('V') for option ...", if it quotes one.
std::optional<std::string> QuotedArgument(absl::string_view what) {
  const size_t open = what.find("('");
  if (open == absl::string_view::npos) return std::nullopt;
  const size_t close = what.find("')", open);
  if (close == absl::string_view::npos) return std::nullopt;
  return std::string(what.substr(open + 2, close - open - 2));
}

// "SHOWN: expected ..., got 'V'" for a value boost could not convert; empty when boost's error
// is of another kind, or the option's type is not one of ours.
std::string BadValue(const po::options_description& desc, const po::error& e,
                     absl::string_view name, absl::string_view shown) {
  if (dynamic_cast<const po::validation_error*>(&e) == nullptr) return "";
  const std::string expected = ExpectedValue(desc, name);
  const std::optional<std::string> given = QuotedArgument(e.what());
  if (expected.empty() || !given.has_value()) return "";
  return absl::StrCat(shown, ": expected ", expected, ", got '", Abbreviate(*given), "'");
}

std::string OptionName(const po::error& e) {
  const auto* named = dynamic_cast<const po::error_with_option_name*>(&e);
  return named != nullptr ? named->get_option_name() : "";
}

// The key of a config line ("key = value"), or "" for blank, comment and section lines.
absl::string_view LineKey(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  if (line.empty() || line[0] == '#' || line[0] == '[') return "";
  const size_t eq = line.find('=');
  return absl::StripAsciiWhitespace(eq == absl::string_view::npos ? line : line.substr(0, eq));
}

// Levenshtein distance, for "did you mean".
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// vLLM `bench serve` spellings with a different name here.
constexpr std::pair<absl::string_view, absl::string_view> kVllmSpellings[] = {
    {"dataset-path", "trace"}, {"dataset-name", "trace-format"}, {"num-prompt", "num-prompts"}};

// The option of `desc` that an unknown `name` (without dashes) most likely meant: the same
// with '_' for '-', a vLLM spelling, the one option it abbreviates, or one within 2 edits (of a
// name of >= 4 letters).
std::string DidYouMean(const po::options_description& desc, absl::string_view name) {
  std::string key(name.substr(0, 64));
  std::replace(key.begin(), key.end(), '_', '-');
  key = absl::AsciiStrToLower(key);
  for (const auto& [vllm, ours] : kVllmSpellings)
    if (key == vllm && desc.find_nothrow(std::string(ours), false) != nullptr) return std::string(ours);
  // An abbreviation (options are never guessed: kCommandLineStyle) of exactly one option.
  std::string prefixed;
  int prefix_count = 0;
  for (const auto& option : desc.options())
    if (key.size() >= 2 && absl::StartsWith(option->long_name(), key) && option->long_name() != key) {
      prefixed = option->long_name();
      ++prefix_count;
    }
  if (prefix_count == 1) return prefixed;
  std::string best;
  size_t best_distance = key.size() >= 4 ? 3 : 1;
  for (const auto& option : desc.options()) {
    const std::string& candidate = option->long_name();
    const size_t d = EditDistance(key, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

// "; did you mean --X?" for an unknown option with a close spelling, else "".
std::string Suggestion(const po::options_description& desc, const po::error& e,
                       absl::string_view dashes) {
  if (dynamic_cast<const po::unknown_option*>(&e) == nullptr) return "";
  const std::string meant = DidYouMean(desc, absl::StripPrefix(OptionName(e), "--"));
  return meant.empty() ? "" : absl::StrCat("; did you mean ", dashes, meant, "?");
}

}  // namespace

absl::StatusOr<std::string> ReadConfigFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadInputFile(path, "--config", ConfigReadLimits());
  if (!text.ok()) return text.status();
  std::string s = *std::move(text);
  if (absl::StartsWith(s, "\xEF\xBB\xBF")) s.erase(0, 3);
  return s;
}

absl::Status CheckUnsignedValues(const po::options_description& desc, const po::parsed_options& parsed,
                                 absl::string_view where) {
  for (const po::option& o : parsed.options) {
    if (o.unregistered || o.string_key.empty()) continue;
    const po::option_description* option = desc.find_nothrow(o.string_key, false);
    if (option == nullptr ||
        dynamic_cast<const po::typed_value<uint64_t>*>(option->semantic().get()) == nullptr)
      continue;
    for (const std::string& value : o.value) {
      uint64_t parsed_value = 0;
      if (!absl::SimpleAtoi(value, &parsed_value) || absl::StartsWith(absl::StripAsciiWhitespace(value), "-"))
        return absl::InvalidArgumentError(absl::StrCat(where, "--", o.string_key,
                                                       ": expected an integer in [0, 18446744073709551615], got '",
                                                       Abbreviate(value), "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status CommandLineError(const po::options_description& desc, const po::error& e,
                              absl::string_view command) {
  const std::string bad_value = BadValue(desc, e, OptionName(e), OptionName(e));
  if (!bad_value.empty()) return absl::InvalidArgumentError(bad_value);
  return absl::InvalidArgumentError(absl::StrCat(Abbreviate(e.what(), 200), Suggestion(desc, e, "--"),
                                                 " (see dspark-sim ", command, " --help)"));
}

absl::Status ConfigFileError(const po::options_description& desc, const po::error& e,
                             const std::string& path, absl::string_view text,
                             absl::string_view command) {
  // Find the line: of the key boost names (its second occurrence for a repeated key), or the
  // malformed line boost quotes.
  const std::string key(absl::StripPrefix(OptionName(e), "--"));
  const bool repeated = dynamic_cast<const po::multiple_occurrences*>(&e) != nullptr;
  std::string malformed;
  if (dynamic_cast<const po::invalid_config_file_syntax*>(&e) != nullptr) {
    const absl::string_view what = e.what();
    const size_t open = what.find('\''), close = what.rfind('\'');
    if (open != absl::string_view::npos && close > open)
      malformed = std::string(absl::StripAsciiWhitespace(what.substr(open + 1, close - open - 1)));
  }
  int64_t found = 0, number = 0;
  int seen = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    const bool match = !malformed.empty() ? absl::StripAsciiWhitespace(line) == malformed
                                          : !key.empty() && LineKey(line) == key;
    if (match && ++seen == (repeated ? 2 : 1)) {
      found = number;
      break;
    }
  }
  const std::string where =
      found > 0 ? absl::StrCat(path, ":", found, ": ") : absl::StrCat(path, ": ");
  const std::string bad_value = BadValue(desc, e, key, absl::StrCat("key '", key, "'"));
  if (!bad_value.empty()) return absl::InvalidArgumentError(absl::StrCat(where, bad_value));
  return absl::InvalidArgumentError(absl::StrCat(where, Abbreviate(e.what(), 200),
                                                 Suggestion(desc, e, ""), " (see dspark-sim ",
                                                 command, " --help)"));
}

absl::Status RefusePositional(const boost::program_options::parsed_options& parsed, absl::string_view command) {
  for (const boost::program_options::option& o : parsed.options) {
    if (o.position_key < 0 && !o.string_key.empty()) continue;
    const std::string word = o.original_tokens.empty() ? (o.value.empty() ? "" : o.value.front())
                                                       : o.original_tokens.front();
    return UnexpectedArgument(word, command);
  }
  return absl::OkStatus();
}

absl::Status UnexpectedArgument(absl::string_view word, absl::string_view command) {
  return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", Abbreviate(std::string(word)),
                                                 "' (dspark-sim ", command,
                                                 " takes options only, each value after its --option; "
                                                 "see dspark-sim ", command, " --help)"));
}

}  // namespace dspark::sim
