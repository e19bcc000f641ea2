// boost::program_options errors turned into this project's messages: the option, what was
// expected and what was given, and for a --config file the file and line of the key.
#pragma once

#include <string>

#include <boost/program_options.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

// The command-line style of every command: Boost's default without allow_guessing, so an
// abbreviation (--num-req for --num-requests, --step-l for --step-log) is an unknown option with
// a "did you mean", never silently taken for an option, and never slips past a list of refused
// names (sweep's pass-through refusals compare whole names).
inline constexpr int kCommandLineStyle =
    boost::program_options::command_line_style::default_style &
    ~boost::program_options::command_line_style::allow_guessing;

// InvalidArgument for a value of an unsigned option (a uint64_t, e.g. --seed) that is not a
// decimal integer in [0, 2^64 - 1]: Boost's conversion wraps "-1" to 2^64 - 1. `where` prefixes
// the message ("" on the command line, "FILE: " for a --config file). "--seed: expected an
// integer in [0, 18446744073709551615], got '-1'".
absl::Status CheckUnsignedValues(const boost::program_options::options_description& desc,
                                 const boost::program_options::parsed_options& parsed,
                                 absl::string_view where = "");

// The text of a --config file (key = value lines), without a leading UTF-8 byte-order mark.
absl::StatusOr<std::string> ReadConfigFile(const std::string& path);

// An error of parsing the command line of `command` ("run"): "--NAME: expected ..., got 'V'"
// for a bad value, boost's own text (and a pointer to --help) otherwise.
absl::Status CommandLineError(const boost::program_options::options_description& desc,
                              const boost::program_options::error& e, absl::string_view command);

// The same for the config file `path` whose text is `text`, prefixed with "path:LINE: " where
// the line of the key (or of the malformed line) is found.
absl::Status ConfigFileError(const boost::program_options::options_description& desc,
                             const boost::program_options::error& e, const std::string& path,
                             absl::string_view text, absl::string_view command);

// InvalidArgument for the first positional argument of `parsed` (a word that is not an option
// or an option's value, e.g. a path typed without its option): every command takes options
// only, and a stray word must not vanish. "unexpected argument 'W' (COMMAND takes options
// only: did you mean --trace W? see dspark-sim COMMAND --help)".
absl::Status RefusePositional(const boost::program_options::parsed_options& parsed, absl::string_view command);

// The InvalidArgument RefusePositional returns, for `word` given to `command`.
absl::Status UnexpectedArgument(absl::string_view word, absl::string_view command);

}  // namespace dspark::sim
