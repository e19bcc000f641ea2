#include "sim/cli/command.h"

#include <sstream>

#include "sim/options/option_errors.h"

namespace dspark::cli {

namespace po = boost::program_options;

absl::StatusOr<po::variables_map> ParseCommandLine(const po::options_description& desc, int argc, char** argv,
                                                   absl::string_view command, std::string* help) {
  po::variables_map vm;
  try {
    const po::parsed_options parsed = po::command_line_parser(argc, argv).options(desc).style(sim::kCommandLineStyle).run();
    if (absl::Status s = sim::RefusePositional(parsed, command); !s.ok()) return s;
    if (absl::Status s = sim::CheckUnsignedValues(desc, parsed); !s.ok()) return s;
    po::store(parsed, vm);
    if (vm.count("help")) {
      std::ostringstream text;
      text << desc;
      *help = text.str();
      return vm;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return sim::CommandLineError(desc, e, command);
  }
  return vm;
}

int CommandError(absl::string_view command, const absl::Status& status, int exit_code) {
  return CommandError(command, "", status, exit_code);
}

int CommandError(absl::string_view command, absl::string_view prefix, const absl::Status& status, int exit_code) {
  std::fprintf(stderr, "dspark-sim %.*s: %.*s%.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(prefix.size()), prefix.data(), static_cast<int>(status.message().size()),
               status.message().data());
  return exit_code;
}

}  // namespace dspark::cli
