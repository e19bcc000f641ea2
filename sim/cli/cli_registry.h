// Subcommands of the one `dspark-sim` executable register themselves here, so that each lives
// in its own file (sim/cmd_*.cc) and main() only dispatches.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace dspark::cli {

// Receives argv with the subcommand name as argv[0]; returns the process exit code.
using CommandFn = std::function<int(int argc, char** argv)>;

struct CommandInfo {
  std::string summary;
  CommandFn fn;
};

std::map<std::string, CommandInfo>& Registry();

struct RegisterCommand {
  RegisterCommand(const std::string& name, const std::string& summary, CommandFn fn) {
    Registry()[name] = CommandInfo{summary, std::move(fn)};
  }
};

}  // namespace dspark::cli
