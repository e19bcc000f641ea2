// A command's option parser called on a word list as main() would call it: args[0] is the
// command's name ("run", "sweep"), the rest its arguments. Tests of parsing and planning use these
// instead of building an argv each.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"

namespace dspark::test {

// `parse(argc, argv, help)` on `args`; `help` (optional) receives the help text when asked for.
template <typename Parser>
auto ParseArgv(Parser parse, std::vector<std::string> args, std::string* help = nullptr) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::string unused;
  return parse(static_cast<int>(argv.size()), argv.data(), help != nullptr ? help : &unused);
}

// `run ARGS...` and `sweep ARGS...`, parsed (not validated: the commands validate before they run).
inline absl::StatusOr<sim::RunConfig> ParseRun(std::vector<std::string> args, std::string* help = nullptr) {
  args.insert(args.begin(), "run");
  return ParseArgv(sim::ParseRunArgs, std::move(args), help);
}
// `run ARGS...` parsed and validated, as the command does before it runs.
inline absl::StatusOr<sim::RunConfig> ParseValidRun(std::vector<std::string> args) {
  absl::StatusOr<sim::RunConfig> c = ParseRun(std::move(args));
  if (c.ok())
    if (absl::Status s = c->Validate(); !s.ok()) return s;
  return c;
}
inline absl::StatusOr<sim::SweepConfig> ParseSweep(std::vector<std::string> args, std::string* help = nullptr) {
  args.insert(args.begin(), "sweep");
  return ParseArgv(sim::ParseSweepArgs, std::move(args), help);
}

}  // namespace dspark::test
