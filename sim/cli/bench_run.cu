// `bench` (c): the full run through the GPU executor, and RunBench, which runs the sections and
// writes bench.json and the CSV files (cmd_bench.cuh).
#include "sim/cli/bench_internal.cuh"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/common/status_macros.h"
#include "sim/model/acceptance.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/studies/run.h"
#include "sim/studies/config.h"
#include "sim/exec/cuda_device.h"
#include "sim/exec/gpu_executor.cuh"
#include "sim/exec/gpu_timing.cuh"
#include "sim/studies/gpu_result_meta.cuh"
#include "sim/studies/metadata_bench.cuh"
#include "sim/results/result_files.h"
#include "sim/results/source_tree.h"
#include "sim/model/time_model.h"
#include "sim/studies/tpot_loop.cuh"
#include "sim/studies/workload.h"

namespace dspark::sim::bench_internal {

namespace fs = std::filesystem;

std::string Md(double v, int digits) { return absl::StrFormat("%.*f", digits, v); }

std::string ImplKeyStr(Impl impl) { return std::string(ImplName(impl)); }

std::string ImplTableHead(absl::string_view first, const std::vector<Impl>& impls,
                          const std::function<std::vector<std::string>(Impl)>& columns,
                          const std::vector<std::string>& after) {
  std::string head = absl::StrCat("| ", first, " |"), rule = "|---|";
  const auto add = [&](const std::string& name) {
    absl::StrAppend(&head, " ", name, " |");
    absl::StrAppend(&rule, "---:|");
  };
  for (Impl impl : impls)
    for (const std::string& name : columns(impl)) add(name);
  for (const std::string& name : after) add(name);
  return absl::StrCat(head, "\n", rule, "\n");
}

std::string CsvCell(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  }
  if (v.is_number_float()) return absl::StrFormat("%.6g", v.get<double>());
  return v.dump();
}

std::string Csv(const ojson& meta, const ojson& rows, const std::vector<std::string>& columns) {
  std::string out = absl::StrCat("# meta: ", meta.dump(), "\n", absl::StrJoin(columns, ","), "\n");
  for (const ojson& row : rows) {
    std::vector<std::string> cells;
    for (const std::string& c : columns) cells.push_back(row.contains(c) ? CsvCell(row[c]) : std::string());
    absl::StrAppend(&out, absl::StrJoin(cells, ","), "\n");
  }
  return out;
}

TimeModelParams LoadTimeParams(const std::string& calibration, std::string* source, absl::Status* status) {
  const std::string path = calibration.empty() ? BundledCalibrationPath() : calibration;
  *source = path.empty() ? "built-in defaults (sim/time_model.cc)" : path;
  if (path.empty()) return DefaultTimeModelParams();
  auto p = LoadCalibration(path);
  if (!p.ok()) {
    *status = p.status();
    return DefaultTimeModelParams();
  }
  return *p;
}

double MedianOf(std::vector<double> v) { return timing::Summarize(std::move(v)).median_us; }

// ---------------------------------------------------------------- (c) full run

absl::StatusOr<ojson> RunFull(const BenchConfig& cfg, std::string* md, std::vector<std::string>* bugs,
                              std::vector<std::string>* warnings, std::FILE* progress) {
  RunConfig rc;
  rc.argv = {"bench --full-run"};
  rc.workload = "speed-8k";
  rc.num_requests = cfg.full_run_requests;
  rc.concurrency = cfg.full_run_concurrency;
  rc.seed = cfg.seed;
  rc.scheduler.mode = SpecMode::kAdaptive;
  rc.impls = cfg.impls;
  rc.time_impl = Impl::kFused;
  rc.check = false;
  rc.executor = "gpu";
  rc.gpu_cold_l2 = cfg.cold_l2;
  rc.calibration = cfg.calibration;
  rc.out_dir = (fs::path(cfg.out_dir) / "full_run").string();
  rc.steps_csv_stride = 1;
  if (progress)
    std::fprintf(progress, "bench: full run, speed-8k adaptive, %lld requests at concurrency %d, impls %s\n",
                 static_cast<long long>(rc.num_requests), rc.concurrency,
                 absl::StrJoin(cfg.impls, ",", [](std::string* o, Impl i) { o->append(ImplKeyStr(i)); }).c_str());
  ojson section;
  section["config"] = {{"workload", "speed-8k"},
                       {"mode", "adaptive"},
                       {"requests", rc.num_requests},
                       {"concurrency", rc.concurrency},
                       {"seed", rc.seed},
                       {"out", rc.out_dir}};
  absl::StatusOr<RunResult> result = ExecuteRun(rc);
  absl::StrAppendFormat(md, "## Full run: speed-8k, adaptive verification, %d requests at concurrency %d, every step through the GPU executor\n\n",
                        rc.num_requests, rc.concurrency);
  if (!result.ok()) {
    section["status"] = "failed";
    section["error"] = std::string(result.status().message());
    bugs->push_back(absl::StrCat("full run: ", result.status().message()));
    absl::StrAppend(md, "FAILED: ", result.status().message(), "\n\n");
    return section;
  }
  // The executor's typed figures (sim/exec/gpu_executor.cuh), as the run hands them back.
  std::shared_ptr<const GpuExecutorFigures> g;
  for (const ExecutorReport& e : result->executors)
    if (auto f = std::dynamic_pointer_cast<const GpuExecutorFigures>(e.figures)) g = f;
  if (g == nullptr) return absl::InternalError("bench full run: the run has no GPU executor figures");
  section["status"] = "ok";
  section["steps"] = result->steps;
  section["topb_on_device"] = GpuTopbJson(g->topb_launches, g->topb_stale_steps);
  const LatencyStats* tpot = result->serving.latency("tpot");
  section["metrics"] = {{"tpot_ms_mean", tpot ? nlohmann::json(tpot->mean_ms) : nlohmann::json()},
                        {"mean_acceptance_length", result->speculative.mean_acceptance_length}};
  absl::StrAppendFormat(md, "%d steps; top-B allocation ran on the device in %d steps (host qsl stale in %d).\n\n",
                        result->steps, g->topb_launches, g->topb_stale_steps);
  absl::StrAppend(md,
                  "| impl | graph replays | eager runs | captures | stale-host cells (steps) | padding residue cells (steps) | bug | GPU µs median [p10-p90] | launches/step | syncs/step |\n",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  constexpr int kStale = static_cast<int>(MismatchKind::kStaleHost);
  constexpr int kResidue = static_cast<int>(MismatchKind::kPaddingResidue);
  constexpr int kBugKind = static_cast<int>(MismatchKind::kBug);
  for (Impl impl : cfg.impls) {
    const std::string key = ImplKeyStr(impl);
    const ExecutorImplStats* found = nullptr;
    for (const auto& [i, st] : g->impls)
      if (i == impl) found = &st;
    if (found == nullptr) return absl::InternalError(absl::StrCat("bench full run: no GPU executor figures of ", key));
    const ExecutorImplStats& st = *found;
    const ImplTally& t = st.check;
    const auto per_step = [&](double v) { return t.steps ? v / t.steps : 0.0; };
    const double launches_per_step = per_step(static_cast<double>(t.counters.Launches()));
    const double host_syncs_per_step = per_step(static_cast<double>(t.counters.host_syncs));
    const double staging_syncs_per_step = per_step(static_cast<double>(st.staging_syncs));
    nlohmann::json steps_with;
    for (int k = 0; k < kNumMismatchKinds; ++k) steps_with[kMismatchKindKeys[k]] = t.steps_with[k];
    section["impls"][key] = {{"stale_host", t.cells[kStale]},
                             {"padding_residue", t.cells[kResidue]},
                             {"bug", t.cells[kBugKind]},
                             {"steps_with", steps_with},
                             {"graph_replays", st.graph_replays},
                             {"eager_runs", st.eager_runs},
                             {"captures", st.captures},
                             {"distinct_graph_keys", st.distinct_keys},
                             {"gpu_us", st.gpu_us.empty() ? nlohmann::json() : GpuUsStatsJson(st.gpu_us)},
                             {"launches_per_step", launches_per_step},
                             {"host_syncs_per_step", host_syncs_per_step},
                             {"staging_syncs_per_step", staging_syncs_per_step}};
    const timing::SampleStats gpu = timing::Summarize(st.gpu_us);
    absl::StrAppendFormat(md, "| %s | %d | %d | %d | %d (%d) | %d (%d) | %d | %s | %.1f | %.2f |\n", key,
                          st.graph_replays, st.eager_runs, st.captures, t.cells[kStale], t.steps_with[kStale],
                          t.cells[kResidue], t.steps_with[kResidue], t.cells[kBugKind],
                          !st.gpu_us.empty()
                              ? absl::StrFormat("%.2f [%.2f-%.2f]", gpu.median_us, gpu.p10_us, gpu.p90_us)
                              : std::string("-"),
                          launches_per_step, host_syncs_per_step + staging_syncs_per_step);
    const int64_t total = t.cells[kStale] + (impl.info().traits.old_indexer_chain ? 0 : t.cells[kResidue]) +
                          t.cells[kBugKind];
    if (!ReadsHostBoundaries(impl) && total != 0)
      bugs->push_back(absl::StrFormat("full run: %s has %d differing cells (must be 0)", key, total));
    if (ReadsHostBoundaries(impl) && t.cells[kStale] == 0)
      warnings->push_back(absl::StrFormat(
          "full run: %s shows no stale-host divergence (expected some under adaptive verification)", key));
  }
  absl::StrAppend(md, "\nA bug in any implementation stops the run. Only the host mappings of vllm-pre47474 and "
                      "vllm-47474 may show stale-host divergence (where the host split is stale), and only the old "
                      "indexer chain of (a)-(c) padding residue; vllm-0.31, vllm-0.34 and fused-suite must show 0 in every "
                      "column.\n\n");
  return section;
}

}  // namespace dspark::sim::bench_internal

namespace dspark::sim {

using namespace bench_internal;
namespace fs = std::filesystem;

absl::StatusOr<BenchOutcome> RunBench(const BenchConfig& cfg) {
  DS_RETURN_IF_ERROR(cfg.Validate());
  DS_RETURN_IF_ERROR(RequireCudaDeviceToMeasure("bench"));
  int device_count = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&device_count));
  if (cfg.device < 0 || cfg.device >= device_count)
    return absl::InvalidArgumentError(
        absl::StrFormat("--device=%d, but %d CUDA device(s) present", cfg.device, device_count));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(cfg.device));
  std::error_code ec;
  fs::create_directories(cfg.out_dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("--out: cannot create '", cfg.out_dir, "': ", ec.message()));

  BenchOutcome res;
  std::FILE* progress = stderr;
  ojson meta;
  try {
    meta = ResultMeta("dspark-sim bench", "dspark-sim/bench", kBenchSchemaVersion, cfg.argv, cfg.device);
  } catch (const CudaError& e) {
    return absl::InternalError(absl::StrCat("bench: reading the device: ", e.what()));
  }
  if (cfg.model != ModelKind::kV41) meta["model"] = std::string(ModelName(cfg.model));
  meta["l2_mode"] = cfg.cold_l2 ? "cold" : "warm";
  meta["reps"] = cfg.reps;
  meta["stopping"] = {{"min_samples", cfg.min_samples},
                      {"max_samples", cfg.reps},
                      {"max_noise_pct", cfg.max_noise_pct},
                      {"max_time_s", cfg.max_time_s},
                      {"rule", "NVBench-style: after min_samples, stop once the relative standard error of the "
                               "mean is <= max_noise_pct; always at max_samples or after max_time_s of timed "
                               "samples per row (the time limit wins over min_samples)"}};
  meta["warmup"] = cfg.warmup;
  meta["batch"] = cfg.batch;
  meta["seed"] = cfg.seed;
  meta["method"] =
      "GPU time per builder suite from CUDA events; graph rows: one replay per sample enqueued behind the L2 flush; "
      "eager rows: the suite issued after the flush completed (host work inside); floor: one empty kernel, same "
      "method, same run, measured before each case";
  std::string& md = res.markdown;
  absl::StrAppendFormat(&md, "# dspark-sim bench\n\n%s (sm_%s), driver %s, CUDA runtime %s, git %s%s, %s\n\n",
                        meta["gpu"].get<std::string>(), meta["compute_capability"].get<std::string>(),
                        meta["driver"].get<std::string>(), meta["cuda_runtime"].get<std::string>(),
                        meta["git_sha"].get<std::string>().substr(0, 12),
                        meta["git_dirty"].is_boolean() && meta["git_dirty"].get<bool>() ? " (dirty)" : "",
                        meta["date_utc"].get<std::string>());

  ojson& j = res.json;
  j["meta"] = meta;
  j["floor_us"] = ojson::object();
  j["metadata"] = ojson::array();
  j["tpot"] = ojson::array();
  if (cfg.metadata) {
    DS_ASSIGN_OR_RETURN(const MetadataSection m, RunMetadata(cfg, progress));
    j["meta"]["flush_bytes"] = m.flush_bytes;
    std::vector<double> graph_floor, eager_floor;
    ojson per_case = ojson::object();
    for (const auto& [c, f] : m.floors) {
      graph_floor.push_back(f.graph.median_us);
      eager_floor.push_back(f.eager.median_us);
      per_case[c] = {{"graph", f.graph.median_us},       {"graph_p10", f.graph.p10_us},
                     {"graph_p90", f.graph.p90_us},      {"eager", f.eager.median_us},
                     {"eager_p10", f.eager.p10_us},      {"eager_p90", f.eager.p90_us}};
    }
    // floor_us holds exactly {graph, eager} (the plots' schema); the per-case floors sit beside it.
    j["floor_us"] = {{"graph", MedianOf(graph_floor)}, {"eager", MedianOf(eager_floor)}};
    j["floor_us_by_case"] = per_case;
    for (const MetadataRow& r : m.rows) {
      j["metadata"].push_back(MetadataRowJson(r));
      if (r.bug > 0)
        res.bugs.push_back(absl::StrFormat("metadata %s / %s / %s: %d cells differ that are bugs: %s", r.case_name,
                                           ImplKeyStr(r.impl), r.method, r.bug, r.check));
      // Padding residue is the old indexer chain's own behaviour ((a)-(c)); stale-host divergence
      // only the host mappings' ((a), (b)). Anything else that differs is a defect.
      if ((!ReadsHostBoundaries(r.impl) && r.stale_host > 0) ||
          (!r.impl.info().traits.old_indexer_chain && r.padding_residue > 0))
        res.bugs.push_back(absl::StrFormat("metadata %s / %s / %s: differs from the reference: %s", r.case_name,
                                           ImplKeyStr(r.impl), r.method, r.check));
    }
    absl::StrAppendFormat(&md, "Floor (one empty kernel, same method, median over the cases): graph %.2f µs, eager %.2f µs\n\n",
                          j["floor_us"]["graph"].get<double>(), j["floor_us"]["eager"].get<double>());
    MetadataMarkdown(cfg, m, &md);
    j["targets"] = Targets(m, &md);
  }
  if (cfg.tpot) {
    DS_ASSIGN_OR_RETURN(ojson t, RunTpot(cfg, j["metadata"], &md, progress));
    j["tpot"] = t["rows"];
    j["tpot_setup"] = t["setup"];
  }
  if (cfg.full_run) {
    DS_ASSIGN_OR_RETURN(ojson f, RunFull(cfg, &md, &res.bugs, &res.warnings, progress));
    j["full_run"] = std::move(f);
  }
  j["bugs"] = res.bugs;
  j["warnings"] = res.warnings;

  const fs::path out(cfg.out_dir);
  DS_RETURN_IF_ERROR(WriteFileAtomically(out / "bench.json", j.dump(2) + "\n"));
  if (cfg.metadata)
    DS_RETURN_IF_ERROR(WriteFileAtomically(
        out / "bench_metadata.csv",
        Csv(j["meta"], j["metadata"],
            {"case", "impl", "method", "gpu_us_median", "gpu_us_p10", "gpu_us_p90", "samples", "stop_reason", "noise_pct", "launches",
             "speedup_vs_chain", "floor_us", "ratio_vs_floor", "host_us_median", "stale_host", "padding_residue",
             "bug", "graph_timing_only", "num_reqs", "num_tokens"})));
  if (cfg.tpot)
    DS_RETURN_IF_ERROR(WriteFileAtomically(
        out / "bench_tpot.csv",
        Csv(j["meta"], j["tpot"],
            {"mode", "impl", "tpot_ms", "reduction_vs_before_pct", "reduction_vs_chain_pct", "composed_samples",
             "loop_tpot_ms", "loop_composed_tpot_ms", "loop_minus_composed_us", "loop_reduction_vs_before_pct",
             "ttft_ms", "itl_ms", "output_tok_s", "samples", "tpot_ms_p10", "tpot_ms_p90",
             "mean_acceptance_length", "steps", "host_us_per_step",
             "forward_standin_us_per_step", "launches_per_step", "impl_host_syncs_per_step",
             "staging_syncs_per_step", "late_captures"})));
  // bench.md: the tables exactly as printed (the one renderer of bench's tables; plots copy it).
  DS_RETURN_IF_ERROR(WriteFileAtomically(out / "bench.md", md));
  absl::StrAppendFormat(&md, "wrote %s/bench.json, bench.md%s%s\n", cfg.out_dir,
                        cfg.metadata ? ", bench_metadata.csv" : "", cfg.tpot ? ", bench_tpot.csv" : "");
  return res;
}

}  // namespace dspark::sim
