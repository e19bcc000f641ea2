// Runs one dspark-sim command in the test's process, through the command registry the binary's
// main() dispatches by: args[0] is the command ("run", "step", ...), the rest its arguments.
// Returns the command's exit status.
#pragma once

#include <string>
#include <vector>

#include "sim/cli/cli_registry.h"

namespace dspark::test {

inline int RunCli(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::Registry().at(args[0]).fn(static_cast<int>(argv.size()), argv.data());
}

}  // namespace dspark::test
