// `dspark-sim run`: parses the command line (sim/studies/run.h), runs it, prints a short report.
#include "sim/cli/cmd_run.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/engine/stop_signal.h"
#include "sim/exec/executor_registry.h"
#include "sim/model/kv_cache.h"
#include "sim/studies/run.h"

namespace dspark::sim {

namespace {

// The metadata check's outcome in one line: per kind, the steps with a difference summed over
// the implementations, and which implementations had them.
std::string CheckOutcome(const RunResult& r, const RunConfig& config) {
  if (!config.check) return "off (--no-check)";
  if (!HasExecutor("metadata-check")) return "requested, but this build has no metadata-check executor";
  const CheckTally* tally = r.check();
  if (tally == nullptr) return "on, but no check section was written";
  std::vector<std::pair<std::string, const ImplTally*>> impls;  // by name, as summary.json lists them
  for (const auto& [impl, t] : tally->impls) impls.emplace_back(std::string(ImplName(impl)), &t);
  std::sort(impls.begin(), impls.end());
  std::string out = absl::StrFormat("%d implementations compared exactly with the reference:", impls.size());
  for (int k = 0; k < kNumMismatchKinds; ++k) {
    int64_t total = 0;
    std::vector<std::string> who;
    for (const auto& [name, t] : impls) {
      total += t->steps_with[k];
      if (t->steps_with[k] > 0) who.push_back(name);
    }
    absl::StrAppendFormat(&out, " %s %d steps%s;", kMismatchKindKeys[k], total,
                          who.empty() ? "" : absl::StrCat(" (", absl::StrJoin(who, ", "), ")"));
  }
  out.pop_back();
  return out;
}

// One line per caveat that applies to this run's numbers (what summary.json says in its fields).
std::vector<std::string> Caveats(const RunResult& r, const RunConfig& config) {
  std::vector<std::string> out;
  const std::string& arrivals = r.workload.arrivals;
  if (arrivals.find("all at t=0") != std::string::npos)
    out.push_back(absl::StrCat("arrivals: ", arrivals,
                               ": a burst, not a load over time; --request-rate R spreads them"));
  else if (!config.trace_path.empty() && r.traffic.requests > 1 && r.workload.arrival_span_s == 0.0)
    // A length-only trace (no timestamps, or every one equal) replayed as it is.
    out.push_back(absl::StrCat("arrivals: every request of the trace arrives at t=0 (it gives lengths only, or one "
                               "timestamp): a burst, not a load over time; --request-rate R spreads them"));
  if (config.scheduler.mode != SpecMode::kNone)
    out.push_back(absl::StrFormat(
        "acceptance: a synthetic model (preset %s, expected length %.3f with all %d drafts), not a drafter's "
        "output; --acceptance-curve sets it",
        r.acceptance_preset, r.expected_acceptance_length, config.scheduler.spec_k));
  const SchedulerConfig& sc = config.scheduler;
  // The run's max_model_len: the trace's longest request when --max-model-len was not given.
  const int32_t max_model_len = r.max_model_len > 0 ? r.max_model_len : sc.max_model_len;
  const int64_t per_request = (int64_t{max_model_len} + sc.block_size - 1) / sc.block_size;
  const int64_t blocks = r.scheduler.kv_blocks;
  if (blocks >= per_request * sc.max_num_seqs + 1)
    out.push_back(absl::StrFormat(
        "KV pool: %d blocks (%.3g GB at %d B per token) hold max-num-seqs (%d) requests of max-model-len (%d): "
        "preemptions cannot happen; a smaller --num-kv-blocks or --kv-gb models memory pressure",
        blocks, static_cast<double>(blocks) * sc.block_size * kKvBytesPerToken / 1e9,
        static_cast<int>(kKvBytesPerToken), sc.max_num_seqs, max_model_len));
  // Overloaded: the instance served clearly fewer requests per second than arrived (a finite
  // offered rate), so the queue and the latencies grow with the run's length.
  const double span = r.workload.arrival_span_s;
  const double served = r.serving.request_throughput;
  const int64_t n = r.serving.completed;
  if (span > 0 && n > 1) {
    const double offered = static_cast<double>(n - 1) / span;
    if (served < 0.9 * offered)
      out.push_back(absl::StrFormat(
          "overloaded: %.3f req/s served of %.3f req/s offered: queueing grows with the run, latencies depend on "
          "its length",
          served, offered));
  }
  if (!r.adaptive_what_ifs.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, text] : r.adaptive_what_ifs) names.push_back(name);
    out.push_back(absl::StrCat("what-if: ", absl::StrJoin(names, ", "),
                               ": their releases never shipped adaptive verification (vLLM 0.28.0 on), so their "
                               "results in this adaptive run describe no release (summary.json "
                               "what_if_adaptive_verification)"));
  }
  if (!r.estimated_metadata_costs.empty())
    out.push_back(absl::StrCat("time model: metadata costs of ", absl::StrJoin(r.estimated_metadata_costs, ", "),
                               " are estimated (not in the calibration file); `dspark-sim calibrate` measures them"));
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
  const RunResult& r = *result;
  std::printf("dspark-sim run: %s, mode %s, time-impl %s, seed %llu\n", r.workload.name.c_str(),
              std::string(SpecModeName(config.scheduler.mode)).c_str(), std::string(ImplKey(config.time_impl)).c_str(),
              static_cast<unsigned long long>(config.seed));
  // 0 is --concurrency's "no limit", which summary.json's max_concurrency writes as null.
  const int32_t concurrency = r.traffic.max_concurrency;
  std::printf("  requests %lld  concurrency %s  steps %lld  preemptions %lld\n",
              static_cast<long long>(r.serving.completed),
              concurrency > 0 ? std::to_string(concurrency).c_str() : "no limit",
              static_cast<long long>(r.steps), static_cast<long long>(r.preemptions));
  // The latencies asked for (--percentile-metrics), in vLLM's keys.
  std::string latencies;
  for (const std::string& metric : config.result_spec.percentile_metrics) {
    const LatencyStats* l = r.serving.latency(metric);
    absl::StrAppendFormat(&latencies, "  %s mean %.3f ms", absl::AsciiStrToUpper(metric), l ? l->mean_ms : 0.0);
  }
  if (!latencies.empty()) std::printf("%s\n", latencies.c_str());
  std::printf("  output throughput %.1f tok/s  mean acceptance length %.3f\n", r.serving.output_throughput,
              r.speculative.mean_acceptance_length);
  if (r.serving.request_goodput) std::printf("  request goodput %.3f req/s\n", *r.serving.request_goodput);
  std::printf("  simulator: %lld steps in %.3f s wall = %.0f steps/s (%.3f s CPU = %.0f steps/s; metadata check %s)\n",
              static_cast<long long>(r.steps), r.wall_s, r.wall_s > 0 ? r.steps / r.wall_s : 0.0, r.cpu_s,
              r.cpu_s > 0 ? r.steps / r.cpu_s : 0.0,
              config.check ? (HasExecutor("metadata-check") ? "on" : "requested, not built") : "off");
  std::printf("  metadata check: %s\n", CheckOutcome(r, config).c_str());
  for (const std::string& caveat : Caveats(r, config)) std::printf("  caveat: %s\n", caveat.c_str());
  std::printf("  wrote %s/{summary.json,steps.csv,requests.csv,perf.json}\n", config.out_dir.c_str());
  if (!r.result_file.empty()) std::printf("  saved the result to %s\n", r.result_file.c_str());
  for (const std::string& note : r.workload.notes) std::printf("  note: %s\n", note.c_str());
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
