// `dspark-sim run` as a subcommand: the options and the run itself are sim/studies/run.h.
#pragma once

namespace dspark::sim {

// The subcommand entry point (registered as "run"): 0 done, 1 the run failed, 2 bad options.
int RunCommand(int argc, char** argv);

}  // namespace dspark::sim
