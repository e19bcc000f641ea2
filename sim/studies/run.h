// One run (`dspark-sim run`, each sweep point): parses run's options into a RunConfig, assembles
// the run (workload, acceptance, time model, engine, executors, observers), replays it and
// writes summary.json, steps.csv and requests.csv (plus perf.json with wall-clock figures, which
// are not deterministic and so kept out of the other files).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sim/studies/config.h"

namespace dspark::sim {

// Parses argv (argv[0] is "run") and --config FILE into a RunConfig. When --help is given,
// returns a config and sets *help to the usage text.
absl::StatusOr<RunConfig> ParseRunArgs(int argc, char** argv, std::string* help);

// Whether `name` (without dashes) is an option of `run` that takes no value (--no-check):
// `sweep` turns a --config file's `name = true/false` into that switch or its opposite.
bool IsRunSwitch(const std::string& name);

struct RunResult {
  nlohmann::json summary;  // what summary.json holds
  int64_t steps = 0;
  double wall_s = 0;       // host wall-clock time of the simulation loop
  double cpu_s = 0;        // the process's CPU time (all threads) during the loop: the steadier
                           // figure on a shared machine
  std::string result_file;  // --save-result: where the result JSON went
};

// Runs a validated config and writes its outputs into config.out_dir.
absl::StatusOr<RunResult> ExecuteRun(const RunConfig& config);

}  // namespace dspark::sim
