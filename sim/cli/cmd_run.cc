// `dspark-sim run`: parses the command line (sim/studies/run.h), runs it, prints a short report.
#include "sim/cli/cmd_run.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/engine/stop_signal.h"
#include "sim/exec/executor_registry.h"
#include "sim/studies/run.h"

namespace dspark::sim {

namespace {

int RunMain(RunConfig& config) {
  config.lock_out = true;  // one process per --out
  // SIGINT/SIGTERM: the step in progress ends, the steps done are written ("interrupted").
  InstallStopHandlers();
  auto result = ExecuteRun(config);
  if (!result.ok()) {
    const int signal = StopSignal().load();
    // The shell's convention for a process ended by a signal: 128 + its number.
    return cli::CommandError("run", result.status(), absl::IsCancelled(result.status()) && signal != 0 ? 128 + signal : 1);
  }
  const nlohmann::json& s = result->summary;
  const nlohmann::json& m = s["metrics"];
  const auto ms = [&](const std::string& key) { return s.contains(key) ? s[key].get<double>() : 0.0; };
  std::printf("dspark-sim run: %s, mode %s, time-impl %s, seed %llu\n",
              s["workload"].value("preset", s["workload"].value("path", std::string())).c_str(),
              s["config"]["mode"].get<std::string>().c_str(),
              s["config"]["time_impl"].get<std::string>().c_str(),
              static_cast<unsigned long long>(config.seed));
  std::printf("  requests %lld  concurrency %d  steps %lld  preemptions %lld\n",
              static_cast<long long>(s["completed"].get<int64_t>()),
              s["workload"]["concurrency"].get<int32_t>(),
              static_cast<long long>(result->steps),
              static_cast<long long>(m["preemptions"].get<int64_t>()));
  // The latencies asked for (--percentile-metrics), in vLLM's keys.
  std::string latencies;
  for (const std::string& metric : config.result_spec.percentile_metrics)
    absl::StrAppendFormat(&latencies, "  %s mean %.3f ms", absl::AsciiStrToUpper(metric),
                          ms(absl::StrCat("mean_", metric, "_ms")));
  if (!latencies.empty()) std::printf("%s\n", latencies.c_str());
  std::printf("  output throughput %.1f tok/s  mean acceptance length %.3f\n",
              s["output_throughput"].get<double>(),
              m["speculative"]["mean_acceptance_length"].get<double>());
  if (!s["request_goodput"].is_null())
    std::printf("  request goodput %.3f req/s\n", s["request_goodput"].get<double>());
  std::printf("  simulator: %lld steps in %.3f s wall = %.0f steps/s (%.3f s CPU = %.0f steps/s; metadata check %s)\n",
              static_cast<long long>(result->steps), result->wall_s,
              result->wall_s > 0 ? result->steps / result->wall_s : 0.0, result->cpu_s,
              result->cpu_s > 0 ? result->steps / result->cpu_s : 0.0,
              config.check ? (HasExecutor("metadata-check") ? "on" : "requested, not built") : "off");
  std::printf("  wrote %s/{summary.json,steps.csv,requests.csv,perf.json}\n", config.out_dir.c_str());
  if (!result->result_file.empty()) std::printf("  saved the result to %s\n", result->result_file.c_str());
  for (const auto& note : s["workload"].value("notes", std::vector<std::string>()))
    std::printf("  note: %s\n", note.c_str());
  return 0;
}

}  // namespace

int RunCommand(int argc, char** argv) {
  return cli::RunParsedCommand<RunConfig>("run", argc, argv, ParseRunArgs, RunMain);
}

namespace {
const cli::RegisterCommand kRegisterRun("run", "replay a workload through the simulator", RunCommand);
}  // namespace

}  // namespace dspark::sim
