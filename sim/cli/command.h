// The one main of every subcommand: parse, --help, Validate() and error printing in one place,
// so each cmd_*.cc holds only its options and its work.
//
//   int FooCommand(int argc, char** argv) {
//     return cli::RunParsedCommand<FooConfig>("foo", argc, argv, ParseFooArgs,
//                                            [](FooConfig& c) { ...; return 0; });
//   }
//
// Exit codes: 0 done (or --help), 2 bad options (a parse error or Validate()); the body returns
// its own (by convention 1 for a failed run, 2 for a missing device or a bad input found late).
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/program_options.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dspark::cli {

// Parses argv (argv[0] is the subcommand) against `desc` into a variables map. With --help,
// sets *help to the usage text (the map is then not to be read further). A bad option is
// InvalidArgument in this project's words (sim/options/option_errors.h, CommandLineError).
absl::StatusOr<boost::program_options::variables_map> ParseCommandLine(
    const boost::program_options::options_description& desc, int argc, char** argv, absl::string_view command,
    std::string* help);

// Prints "dspark-sim COMMAND: MESSAGE" on stderr and returns `exit_code`.
int CommandError(absl::string_view command, const absl::Status& status, int exit_code);
// The same with a prefix naming what failed, e.g. "--json: ".
int CommandError(absl::string_view command, absl::string_view prefix, const absl::Status& status, int exit_code);

template <typename Config>
using ParseFn = std::function<absl::StatusOr<Config>(int argc, char** argv, std::string* help)>;

template <typename Config, typename = void>
struct HasValidate : std::false_type {};
template <typename Config>
struct HasValidate<Config, std::void_t<decltype(std::declval<const Config&>().Validate())>> : std::true_type {};

// Runs parse; prints the help (exit 0) or the error (exit 2); then Config::Validate() when the
// config has one (exit 2 on an error); then returns body(config).
template <typename Config>
int RunParsedCommand(absl::string_view command, int argc, char** argv, const ParseFn<Config>& parse,
                     const std::function<int(Config&)>& body) {
  std::string help;
  absl::StatusOr<Config> config = parse(argc, argv, &help);
  if (!config.ok()) return CommandError(command, config.status(), 2);
  if (!help.empty()) {
    std::fputs(help.c_str(), stdout);
    return 0;
  }
  if constexpr (HasValidate<Config>::value) {
    if (const absl::Status s = config->Validate(); !s.ok()) return CommandError(command, s, 2);
  }
  return body(*config);
}

}  // namespace dspark::cli
