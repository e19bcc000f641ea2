#include "sim/studies/run.h"
#include "sim/results/result_meta.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kernels/batch.h"
#include "kernels/common/status_macros.h"
#include "sim/model/acceptance.h"
#include "sim/model/kv_cache.h"
#include "sim/model/scheduler.h"
#include "sim/exec/check_memory.h"
#include "sim/exec/cuda_device.h"
#include "sim/engine/engine.h"
#include "sim/engine/stop_signal.h"
#include "sim/exec/executor_registry.h"
#include "sim/exec/step_dump.h"
#include "sim/observe/av_dump.h"
#include "sim/observe/invariants.h"
#include "sim/observe/metrics.h"
#include "sim/observe/serving_result.h"
#include "sim/options/option_errors.h"
#include "sim/results/out_folder.h"
#include "sim/results/result_files.h"
#include "sim/results/source_tree.h"
#include "sim/observe/step_log.h"
#include "sim/model/time_model.h"
#include "sim/options/option_text.h"
#include "sim/studies/run_files.h"
#include "sim/studies/workload.h"
#include "sim/workload/input_file.h"

namespace dspark::sim {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

// The key path of the first NaN or infinite number in `j`, or "" when every number is finite.
std::string FirstNonFinite(const nlohmann::json& j, const std::string& path) {
  if (j.is_number_float()) return std::isfinite(j.get<double>()) ? "" : (path.empty() ? "(value)" : path);
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      std::string bad = FirstNonFinite(value, path.empty() ? key : absl::StrCat(path, ".", key));
      if (!bad.empty()) return bad;
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      std::string bad = FirstNonFinite(j[i], absl::StrCat(path, "[", i, "]"));
      if (!bad.empty()) return bad;
    }
  }
  return "";
}

constexpr int kSchemaVersion = 1;

}  // namespace

const CheckTally* RunResult::check() const {
  for (const ExecutorReport& e : executors)
    if (e.check) return &*e.check;
  return nullptr;
}

nlohmann::json TrafficJson(const RunTraffic& t) {
  return {{"num_prompts", t.requests},
          {"request_rate", std::isinf(t.request_rate) ? nlohmann::json("inf") : nlohmann::json(t.request_rate)},
          {"burstiness", t.burstiness},
          {"max_concurrency", t.max_concurrency > 0 ? nlohmann::json(t.max_concurrency) : nlohmann::json()}};
}

namespace {

// Without --max-model-len, max_model_len follows the trace: its longest request (prompt +
// output) when that is longer than the default, so a long-context trace is accepted as it is.
// The raised limit goes through Validate's bounds (the check's per-token rows, the block-table
// indices), and the run says what it chose and what it holds before it starts.
absl::Status MaxModelLenFromTrace(RunConfig* config) {
  if (config->max_model_len_given || config->trace_path.empty()) return absl::OkStatus();
  // Every row is held to max_model_len, not only those replayed; the rows are scanned, not kept.
  TraceOptions scan;
  scan.format = config->trace_format;
  scan.skip_bad_rows = config->skip_bad_rows;
  scan.max_model_len = kMaxTraceTokens;
  scan.over_length = config->over_length;
  scan.keep_requests = false;
  DS_ASSIGN_OR_RETURN(const Trace trace, LoadTrace(config->trace_path, scan));
  const int64_t longest = trace.longest_request;
  const int32_t was = config->scheduler.max_model_len;
  if (longest <= was) return absl::OkStatus();
  config->scheduler.max_model_len = static_cast<int32_t>(longest);
  if (absl::Status s = config->Validate(); !s.ok())
    return absl::Status(s.code(), absl::StrFormat("max-model-len %d, the longest request of %s (give --max-model-len "
                                                  "and --over-length skip or clip to replay less): %s",
                                                  longest, config->trace_path, s.message()));
  const SchedulerConfig& sc = config->scheduler;
  const int64_t per_request = (longest + sc.block_size - 1) / sc.block_size;
  const int64_t kv_blocks = sc.num_kv_blocks > 0 ? sc.num_kv_blocks : AutoKvBlocks(sc);
  const int64_t row_cells = per_request + ModelConsts{}.swa_window;
  const std::string pool = config->kv_gb > 0 ? "(below)" : std::to_string(kv_blocks);
  std::fprintf(stderr,
               "dspark-sim run: max-model-len %lld follows the trace's longest request (default %d; "
               "--max-model-len sets it); KV pool %s blocks of %d tokens (%s); block-table rows of %lld "
               "entries; the check holds up to %.1f MiB of rows per implementation for a step of "
               "%d tokens\n",
               static_cast<long long>(longest), was,
               pool.c_str(), sc.block_size,
               config->kv_gb > 0           ? "--kv-gb"
               : sc.num_kv_blocks > 0 ? "--num-kv-blocks"
                                      : "max-num-seqs requests of max-model-len",
               static_cast<long long>(per_request),
               static_cast<double>(row_cells) * 4.0 * sc.max_num_batched_tokens / (1 << 20),
               sc.max_num_batched_tokens);
  return absl::OkStatus();
}

// --kv-gb: the pool of RunConfig::KvGbBlocks (Validate held it to one request of the final
// max_model_len), at most what max-num-seqs requests of max-model-len can use. Said on the
// console before the run.
absl::Status KvBlocksFromGb(RunConfig* config) {
  if (!(config->kv_gb > 0)) return absl::OkStatus();
  SchedulerConfig& sc = config->scheduler;
  const int64_t useful = AutoKvBlocks(sc);
  const int64_t blocks = std::min(config->KvGbBlocks(), useful);
  sc.num_kv_blocks = static_cast<int32_t>(blocks);
  std::fprintf(stderr, "dspark-sim run: KV pool %lld blocks of %d tokens from --kv-gb %g (%d B per token)%s\n",
               static_cast<long long>(blocks), sc.block_size, config->kv_gb, static_cast<int>(kKvBytesPerToken),
               blocks == useful ? ", all that max-num-seqs requests of max-model-len can use" : "");
  return config->Validate();
}

uint64_t OutputTokens(const std::vector<RequestSpec>& requests) {
  uint64_t tokens = 0;
  for (const RequestSpec& r : requests) tokens += static_cast<uint64_t>(std::max(r.output_len, 0));
  return tokens;
}

}  // namespace

uint64_t RunRecordBytes(const std::vector<RequestSpec>& requests) {
  constexpr uint64_t kPerRequest = 1024;    // RequestRecord, RequestSpec, the scheduler's entry
  constexpr uint64_t kPerOutputToken = 12;  // a float gap, with the series' growth
  return requests.size() * kPerRequest + OutputTokens(requests) * kPerOutputToken;
}

absl::StatusOr<uint64_t> CheckRunRecordMemory(const std::vector<RequestSpec>& requests, uint64_t available_bytes) {
  const uint64_t need = RunRecordBytes(requests);
  if (need <= available_bytes) return need;
  return absl::ResourceExhaustedError(absl::StrFormat(
      "this run keeps about %.2f GB for its result (%d requests, %d output tokens: a record per request and the "
      "inter-token gaps), the machine has %.2f GB available; replay fewer requests with --num-requests",
      static_cast<double>(need) / 1e9, requests.size(), OutputTokens(requests),
      static_cast<double>(available_bytes) / 1e9));
}

absl::StatusOr<RunResult> ExecuteRun(const RunConfig& given_config) {
  RunConfig config = given_config;
  DS_RETURN_IF_ERROR(config.Validate());
  DS_RETURN_IF_ERROR(MaxModelLenFromTrace(&config));
  DS_RETURN_IF_ERROR(KvBlocksFromGb(&config));
  if (config.executor == "gpu")
    if (absl::Status s = RequireCudaDevice(kGpuExecutorNeedsDevice); !s.ok())
      return absl::Status(s.code(), absl::StrCat("--executor gpu: ", s.message()));
  // One writer per output folder. A folder that is there is locked at once, so a second run into
  // it fails before any work; one that is not is locked when it is made (below), so a run that
  // fails on its inputs leaves no folder behind.
  std::optional<OutFolderLock> out_lock;
  const auto lock_out = [&]() -> absl::Status {
    if (!config.lock_out || out_lock.has_value()) return absl::OkStatus();
    DS_ASSIGN_OR_RETURN(OutFolderLock lock, OutFolderLock::Acquire(config.out_dir, "run"));
    out_lock.emplace(std::move(lock));
    return absl::OkStatus();
  };
  if (std::error_code exists_ec; fs::exists(config.out_dir, exists_ec)) DS_RETURN_IF_ERROR(lock_out());
  DS_ASSIGN_OR_RETURN(Workload workload, BuildWorkload(config));
  // What the run keeps for its result grows with the workload: refused before the first step
  // when it cannot fit, said when it is large.
  DS_ASSIGN_OR_RETURN(const uint64_t keeps, CheckRunRecordMemory(workload.requests, AvailableHostMemory()));
  if (keeps > (uint64_t{1} << 30))
    std::fprintf(stderr,
                 "dspark-sim run: keeps about %.1f GB for the result of %zu requests as it goes (and %d bytes per "
                 "step row kept, --steps-csv-stride)\n",
                 static_cast<double>(keeps) / 1e9, workload.requests.size(), static_cast<int>(sizeof(StepRecord)));
  if (!config.dump_workload.empty())
    DS_RETURN_IF_ERROR(WriteFileAtomically(config.dump_workload, ToJsonl(workload.requests)));

  const int spec_k = config.scheduler.spec_k;
  DS_ASSIGN_OR_RETURN(AcceptanceParams acceptance_params,
                      AcceptancePreset(workload.acceptance_preset, spec_k));
  if (!config.acceptance_curve.empty()) {
    DS_ASSIGN_OR_RETURN(acceptance_params.curve, ParseAcceptanceCurve(config.acceptance_curve, spec_k));
    acceptance_params.name = "custom";
  }
  if (config.confidence_concentration > 0.0) acceptance_params.confidence_concentration = config.confidence_concentration;
  const AcceptanceModel acceptance(acceptance_params, spec_k);

  const std::string calibration = config.calibration.empty() ? BundledCalibrationPath() : config.calibration;
  TimeModelParams time_params = DefaultTimeModelParams();
  if (!calibration.empty()) {
    DS_ASSIGN_OR_RETURN(time_params, LoadCalibration(calibration));
  }
  const TimeModel time_model(time_params);

  EngineOptions options;
  options.concurrency = workload.concurrency;
  options.time_impl = config.time_impl;
  options.check_kv_each_step = config.check_kv_each_step;
  options.stop = &StopSignal();  // set only where the command installed its handlers
  Engine engine(config.scheduler, workload.requests, acceptance, time_model, options, config.seed);

  // Executors first (they do the step's work and may fail it), in their declared order; then the
  // observers: a step an executor fails never reaches the metrics, so an aborted run's files hold
  // exactly the steps that completed.
  if (config.executor == "gpu" && !HasExecutor("gpu-executor"))
    return absl::FailedPreconditionError(
        "--executor gpu: this build has no GPU executor (built without CUDA); rebuild with nvcc, or use "
        "--executor cpu (CPU mode: emulated kernels, calibrated costs)");
  ExecutorRequest request;
  request.impls = config.impls;
  request.check = config.check;
  request.jobs = config.jobs;
  request.dedup = config.dedup;
  request.device = config.executor;
  request.gpu_cold_l2 = config.gpu_cold_l2;
  request.scheduler = config.scheduler;
  request.out_dir = config.out_dir;
  request.dump_dir = config.dump_steps;
  request.dump_limit = config.dump_steps_limit;
  request.what_if = config.what_if;
  request.consts = ModelConstsFor(config.model);
  request.consts.what_if_57207 = config.what_if_57207;
  // Read once (ReadGitRevision runs git twice): the step dumps' meta differs only in its tool.
  const nlohmann::ordered_json meta = ResultMeta({"dspark-sim run", "", kSchemaVersion, config.argv, config.seed});
  request.meta = meta;
  request.meta["tool"] = "dspark-sim run --dump-steps";
  std::vector<std::unique_ptr<StepExecutor>> executors;
  for (const ExecutorRegistration& registered : RegisteredExecutors()) {
    DS_ASSIGN_OR_RETURN(std::unique_ptr<StepExecutor> executor, registered.factory(request));
    if (executor == nullptr) continue;
    engine.AddExecutor(executor.get());
    executors.push_back(std::move(executor));
  }
  std::unique_ptr<InvariantChecker> invariants;
  if (config.check_invariants) {
    InvariantOptions invariant_options;
    invariant_options.rows_every = config.check ? 1 : 0;  // the arrays are built anyway when checked
    invariants = std::make_unique<InvariantChecker>(config.scheduler, invariant_options);
    engine.AddObserver(invariants.get());
  }
  MetricsObserver metrics(workload.requests, config.steps_csv_stride);
  metrics.set_result_spec(config.result_spec);
  engine.AddObserver(&metrics);
  std::unique_ptr<AvDumpObserver> av_dump;
  if (!config.dump_av.empty()) {
    av_dump = std::make_unique<AvDumpObserver>(config.dump_av_steps);
    engine.AddObserver(av_dump.get());
  }
  std::unique_ptr<StepLogObserver> step_log;
  if (!config.step_log.empty()) {
    step_log = std::make_unique<StepLogObserver>();
    engine.AddObserver(step_log.get());
  }

  // The output folder, before the first step. summary.json says "running" until the run ends
  // and replaces it (atomically) with its result: a run killed on the way is never taken for a
  // finished one, nor is an earlier run's summary left beside this run's files.
  DS_RETURN_IF_ERROR(lock_out());
  std::error_code ec;
  fs::create_directories(config.out_dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("--out: cannot create '", config.out_dir, "': ", ec.message()));
  const fs::path out(config.out_dir);
  // Temporary files of an earlier run into this folder that was killed while writing.
  DS_RETURN_IF_ERROR(RemoveStaleTempFiles(out).status());
  const nlohmann::json running = {{"meta", meta}, {"status", "running"}, {"config", config.ToJson()}};
  DS_RETURN_IF_ERROR(WriteFileAtomically(out / "summary.json", running.dump(2) + "\n"));
  // steps.csv and requests.csv are written as the run goes (sim/studies/run_files.h).
  RunFilesObserver run_files(metrics, config.steps_csv_stride);
  DS_RETURN_IF_ERROR(run_files.Open(out));
  engine.AddObserver(&run_files);
  // From here on an error is recorded in summary.json ("status": "failed"), best effort.
  const auto failed = [&](const absl::Status& error, int64_t steps) {
    const nlohmann::json summary = {{"meta", meta}, {"status", "failed"}, {"error", std::string(error.message())},
                                    {"steps_completed", steps}, {"config", config.ToJson()}};
    WriteFileAtomically(out / "summary.json", summary.dump(2) + "\n").IgnoreError();
    return error;
  };

  // Last, so it counts the steps every other stage accepted.
  // By output tokens emitted: every decode step advances them (docs/performance.md).
  int64_t output_tokens = 0;
  for (const auto& r : workload.requests) output_tokens += r.output_len;
  ProgressObserver progress(config.progress, stderr, static_cast<int64_t>(workload.requests.size()), output_tokens);
  engine.AddObserver(&progress);

  const std::clock_t c0 = std::clock();
  const auto t0 = std::chrono::steady_clock::now();
  // A step that fails (a CUDA error, a BUG mismatch) stops the run; the completed steps' results
  // are still written, marked "status": "aborted", and the error is returned after them. So are
  // they when SIGINT or SIGTERM stops it (sim/engine/stop_signal.h), marked "interrupted".
  const absl::Status run_status = engine.Run();
  const bool interrupted = absl::IsCancelled(run_status);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  for (const auto& executor : executors) cpu_s += executor->other_processes_cpu_s();
  progress.End();

  // The typed result first; summary.json is written from it below (its one writer).
  RunResult result;
  result.steps = engine.steps();
  result.max_model_len = config.scheduler.max_model_len;
  result.wall_s = wall_s;
  result.cpu_s = cpu_s;
  result.traffic.requests = static_cast<int64_t>(workload.requests.size());
  result.traffic.request_rate = config.request_rate;
  result.traffic.burstiness = config.burstiness;
  result.traffic.max_concurrency = workload.concurrency;
  result.workload = workload.facts;
  result.acceptance_preset = acceptance_params.name;
  result.expected_acceptance_length = ExpectedAcceptanceLength(acceptance_params.curve.data(), spec_k);
  // Only the states of the run's model are named.
  for (Impl impl : ImplsOfModel(config.model))
    if (time_params.impls[impl.index()].estimated) result.estimated_metadata_costs.emplace_back(ImplKey(impl));
  if (config.scheduler.mode == SpecMode::kAdaptive) {
    std::vector<Impl> used = config.check ? config.impls : std::vector<Impl>{};
    if (std::find(used.begin(), used.end(), config.time_impl) == used.end()) used.push_back(config.time_impl);
    for (Impl impl : used)
      if (std::string text = AdaptiveVerificationWhatIf(impl); !text.empty())
        result.adaptive_what_ifs.emplace_back(std::string(ImplKey(impl)), std::move(text));
  }
  const Scheduler& sched = engine.scheduler();
  result.scheduler.steps = engine.steps();
  result.scheduler.simulated_time_s = engine.now_s();
  result.scheduler.counters = sched.counters();
  result.scheduler.kv_blocks = sched.kv().num_blocks();
  result.scheduler.capture_sizes = sched.capture_sizes();

  nlohmann::json s;
  s["meta"] = meta;
  s["status"] = run_status.ok() ? "ok" : interrupted ? "interrupted" : "aborted";
  if (!run_status.ok()) {
    s["error"] = std::string(run_status.message());
    s["steps_completed"] = engine.steps();
  }
  s["config"] = config.ToJson();
  s["workload"] = workload.info;
  s["acceptance"] = {{"preset", result.acceptance_preset},
                     {"curve", acceptance_params.curve},
                     {"expected_length_all_drafts", result.expected_acceptance_length},
                     {"request_logit_sigma", acceptance_params.request_logit_sigma}};
  nlohmann::json estimated = nlohmann::json::array();
  for (const std::string& name : result.estimated_metadata_costs) estimated.push_back(name);
  s["time_model"] = {{"source", time_params.source},
                     {"device", time_params.source_device},
                     {"time_impl", std::string(ImplKey(config.time_impl))},
                     {"serializes_host", time_params.impls[config.time_impl.index()].serializes_host},
                     {"estimated_metadata_costs", estimated}};
  if (!result.adaptive_what_ifs.empty()) {
    nlohmann::json& what_if = s["what_if_adaptive_verification"] = nlohmann::json::object();
    for (const auto& [name, text] : result.adaptive_what_ifs) what_if[name] = text;
  }
  const SchedulerResult& sr = result.scheduler;
  s["scheduler"] = {{"steps", sr.steps},
                    {"simulated_time_s", sr.simulated_time_s},
                    {"preemptions", sr.counters.preemptions},
                    {"peak_running", sr.counters.peak_running},
                    {"kv_blocks", sr.kv_blocks},
                    {"peak_kv_blocks", sr.counters.peak_kv_blocks},
                    {"capture_sizes", sr.capture_sizes}};
  if (absl::Status finished = metrics.Finish(&s["metrics"]); !finished.ok()) return failed(finished, engine.steps());
  result.serving = metrics.serving_result();
  result.speculative = metrics.speculative();
  result.preemptions = metrics.preemptions();
  // vLLM's result keys at the top level (sim/observe/serving_result.h), with its setup keys.
  s.update(ServingResultJson(result.serving));
  s.update(TrafficJson(result.traffic));
  s["backend"] = "dspark-sim";
  // vLLM's other setup keys: endpoint_type repeats backend (as vLLM writes it), label is
  // --label's (none here), the model is the layout the simulator reproduces, no tokenizer.
  s["endpoint_type"] = "dspark-sim";
  s["label"] = nullptr;
  s["model_id"] = "DeepSeek-V4.1 metadata layout (simulated by dspark-sim)";
  s["tokenizer_id"] = nullptr;
  if (config.check && !HasExecutor("metadata-check"))
    s["metadata_check"] = "requested, but this build has no metadata-check executor";
  // Each section once: an executor's, then the invariant check's.
  std::vector<std::pair<std::string, std::function<absl::Status(nlohmann::json*)>>> sections;
  for (auto& executor : executors)
    sections.emplace_back(executor->name(), [&](nlohmann::json* j) { return executor->Finish(j); });
  if (invariants) sections.emplace_back(invariants->name(), [&](nlohmann::json* j) { return invariants->Finish(j); });
  for (auto& [name, finish] : sections) {
    const absl::Status finished = finish(&s[name]);
    if (finished.ok()) continue;
    if (run_status.ok()) return failed(finished, engine.steps());
    s[name] = {{"error", std::string(finished.message())}};
  }
  for (auto& executor : executors) {
    ExecutorReport report;
    report.name = std::string(executor->name());
    if (const CheckTally* tally = executor->check_tally()) report.check = *tally;
    report.figures = executor->figures();
    result.executors.push_back(std::move(report));
  }

  // A result is never "ok" with a number that is not one: JSON would write NaN or inf as null.
  if (const std::string bad = FirstNonFinite(s, ""); run_status.ok() && !bad.empty())
    return failed(absl::OutOfRangeError(absl::StrCat(
                      "summary.json: ", bad, " is not a finite number; a cost of the time model (--calibration, "
                      "or its defaults) or an option gives times beyond what a double holds")),
                  engine.steps());
  // Each file appears whole or not at all; summary.json goes last, replacing "running", so a
  // folder whose summary has a final status holds the other files of the same run.
  const auto written = [&]() -> absl::Status {
    DS_RETURN_IF_ERROR(run_files.Close());
    const nlohmann::json perf = {{"wall_s", wall_s},
                                 {"steps", engine.steps()},
                                 {"steps_per_s", wall_s > 0 ? engine.steps() / wall_s : 0.0},
                                 {"cpu_s", cpu_s},
                                 {"metadata_check", config.check && !sections.empty()}};
    DS_RETURN_IF_ERROR(WriteFileAtomically(out / "perf.json", perf.dump(2) + "\n"));
    if (step_log) DS_RETURN_IF_ERROR(WriteFileAtomically(config.step_log, step_log->text()));
    if (av_dump) DS_RETURN_IF_ERROR(WriteFileAtomically(config.dump_av, av_dump->text()));
    return WriteFileAtomically(out / "summary.json", s.dump(2) + "\n");
  };
  if (absl::Status w = written(); !w.ok()) return failed(w, engine.steps());
  if (config.save_result) {
    const fs::path dir(config.result_dir.empty() ? config.out_dir : config.result_dir);
    fs::create_directories(dir, ec);
    if (ec)
      return absl::PermissionDeniedError(
          absl::StrCat("--result-dir: cannot create '", dir.string(), "': ", ec.message()));
    result.result_file = (dir / config.ResultFilename(workload.concurrency)).string();
    // vLLM's file: its keys in its order (with its date and per-request lists), then ours.
    const std::string date = absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone());
    DS_RETURN_IF_ERROR(WriteFileAtomically(
        result.result_file,
        VllmResultFile(s, metrics.serving_lists(), config.result_spec, date).dump(2) + "\n"));
  }
  if (interrupted)
    return absl::CancelledError(absl::StrFormat(
        "%s: the %d steps done are in %s (summary.json \"status\": \"interrupted\")", run_status.message(),
        engine.steps(), config.out_dir));
  if (!run_status.ok())
    return absl::Status(run_status.code(),
                        absl::StrFormat("%s [run aborted: the %d completed steps' results are in %s (summary.json "
                                        "\"status\": \"aborted\")]",
                                        run_status.message(), engine.steps(), config.out_dir));
  return result;
}

}  // namespace dspark::sim