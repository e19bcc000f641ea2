// `dspark-sim run`: parses the command line (sim/studies/run.h), runs it, prints a short report.
#include "sim/cli/cmd_run.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/engine/stop_signal.h"
#include "sim/exec/executor_registry.h"
#include "sim/studies/run.h"

namespace dspark::sim {

namespace {

// The metadata check's outcome in one line: per kind, the steps with a difference summed over
// the implementations, and which implementations had them.
std::string CheckOutcome(const nlohmann::json& s, const RunConfig& config) {
  if (!config.check) return "off (--no-check)";
  const auto section = s.find("metadata_check");
  if (section == s.end()) return "on, but no check section was written";
  if (section->is_string()) return section->get<std::string>();
  const auto impls = section->find("impls");
  if (impls == section->end() || !impls->is_object()) return "on, no per-implementation counts";
  std::string out = absl::StrFormat("%d implementations compared exactly with the reference:", impls->size());
  for (const char* kind : {"stale_host", "padding_residue", "bug"}) {
    int64_t total = 0;
    std::vector<std::string> who;
    for (const auto& [name, entry] : impls->items()) {
      const int64_t n = entry.is_object() ? entry.value(kind, int64_t{0}) : 0;
      total += n;
      if (n > 0) who.push_back(name);
    }
    absl::StrAppendFormat(&out, " %s %d steps%s;", kind, total,
                          who.empty() ? "" : absl::StrCat(" (", absl::StrJoin(who, ", "), ")"));
  }
  out.pop_back();
  return out;
}

// One line per caveat that applies to this run's numbers (what summary.json says in its fields).
std::vector<std::string> Caveats(const nlohmann::json& s, const RunConfig& config) {
  std::vector<std::string> out;
  const nlohmann::json& wl = s["workload"];
  const std::string arrivals = wl.value("arrivals", std::string());
  if (arrivals.find("all at t=0") != std::string::npos)
    out.push_back(absl::StrCat("arrivals: ", arrivals,
                               ": a burst, not a load over time; --request-rate R spreads them"));
  if (config.scheduler.mode != SpecMode::kNone)
    out.push_back(absl::StrFormat(
        "acceptance: a synthetic model (preset %s, expected length %.3f with all %d drafts), not a drafter's "
        "output; --acceptance-curve sets it",
        s["acceptance"].value("preset", std::string("?")),
        s["acceptance"].value("expected_length_all_drafts", 0.0), config.scheduler.spec_k));
  const SchedulerConfig& sc = config.scheduler;
  // The run's max_model_len: the trace's longest request when --max-model-len was not given.
  const int32_t max_model_len = s["config"].value("max_model_len", sc.max_model_len);
  const int64_t per_request = (int64_t{max_model_len} + sc.block_size - 1) / sc.block_size;
  const int64_t blocks = s["scheduler"].value("kv_blocks", int64_t{0});
  if (blocks >= per_request * sc.max_num_seqs + 1)
    out.push_back(absl::StrFormat(
        "KV pool: %d blocks hold max-num-seqs (%d) requests of max-model-len (%d): preemptions cannot happen; "
        "a smaller --num-kv-blocks models memory pressure",
        blocks, sc.max_num_seqs, max_model_len));
  // Overloaded: the instance served clearly fewer requests per second than arrived (a finite
  // offered rate), so the queue and the latencies grow with the run's length.
  const double span = wl.value("arrival_span_s", 0.0);
  const double served = s.value("request_throughput", 0.0);
  const int64_t n = s.value("completed", int64_t{0});
  if (span > 0 && n > 1) {
    const double offered = static_cast<double>(n - 1) / span;
    if (served < 0.9 * offered)
      out.push_back(absl::StrFormat(
          "overloaded: %.3f req/s served of %.3f req/s offered: queueing grows with the run, latencies depend on "
          "its length",
          served, offered));
  }
  const auto& estimated = s["time_model"]["estimated_metadata_costs"];
  if (estimated.is_array() && !estimated.empty()) {
    std::vector<std::string> names;
    for (const auto& e : estimated) names.push_back(e.get<std::string>());
    out.push_back(absl::StrCat("time model: metadata costs of ", absl::StrJoin(names, ", "),
                               " are estimated (not in the calibration file); `dspark-sim calibrate` measures them"));
  }
  return out;
}

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
  std::printf("  metadata check: %s\n", CheckOutcome(s, config).c_str());
  for (const std::string& caveat : Caveats(s, config)) std::printf("  caveat: %s\n", caveat.c_str());
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
