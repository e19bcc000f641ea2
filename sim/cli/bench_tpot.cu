// `bench` (b): the batch-1 TPOT table from the TPOT loop (bench_internal.cuh).
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
#include "sim/studies/metadata_bench.cuh"
#include "sim/results/result_files.h"
#include "sim/results/source_tree.h"
#include "sim/model/time_model.h"
#include "sim/studies/tpot_loop.cuh"
#include "sim/studies/workload.h"

namespace dspark::sim::bench_internal {

namespace fs = std::filesystem;

namespace {

struct TpotRow {
  SpecMode mode;
  Impl impl;
  std::vector<TpotLoopResult> samples;
};

}  // namespace

absl::StatusOr<ojson> RunTpot(const BenchConfig& cfg, std::string* md, std::FILE* progress) {
  std::string time_source;
  absl::Status calib_status;
  const TimeModelParams time_params = LoadTimeParams(cfg.calibration, &time_source, &calib_status);
  DS_RETURN_IF_ERROR(calib_status);

  // One pair of suites for every mode: the largest capacity any mode's scheduler needs.
  GpuSuiteCapacity cap{1, 1, 1};
  for (SpecMode mode : cfg.tpot_modes) {
    SchedulerConfig sc;
    sc.mode = mode;
    const GpuSuiteCapacity c = CapacityFor(sc);
    cap.max_tokens = std::max(cap.max_tokens, c.max_tokens);
    cap.max_reqs = std::max(cap.max_reqs, c.max_reqs);
    cap.max_bt_stride = std::max(cap.max_bt_stride, c.max_bt_stride);
  }
  DS_ASSIGN_OR_RETURN(std::unique_ptr<TpotLoop> loop, TpotLoop::Create(cap));

  ojson standin = ojson::array();
  {
    CudaStream stream;
    for (double us : {time_params.drafter.fixed_us, time_params.target.fixed_us}) {
      DS_ASSIGN_OR_RETURN(const double measured, MeasureForwardStandIn(us, stream.get()));
      standin.push_back({{"requested_us", us}, {"measured_us", measured}});
    }
  }

  std::vector<TpotRow> rows;
  ojson setup;
  for (SpecMode mode : cfg.tpot_modes) {
    RunConfig rc;
    rc.workload = "batch1-512";
    rc.num_requests = cfg.tpot_samples;
    rc.seed = cfg.seed;
    rc.scheduler.mode = mode;
    DS_ASSIGN_OR_RETURN(const Workload workload, BuildWorkload(rc));
    DS_ASSIGN_OR_RETURN(const AcceptanceParams acceptance,
                        AcceptancePreset(workload.acceptance_preset, rc.scheduler.spec_k));
    setup[std::string(SpecModeName(mode))] = {{"workload", workload.info},
                                              {"acceptance_preset", acceptance.name},
                                              {"acceptance_curve", acceptance.curve}};
    std::vector<TpotRow> mode_rows;
    for (Impl impl : cfg.impls) mode_rows.push_back({mode, impl, {}});
    for (int s = 0; s < cfg.tpot_samples; ++s) {
      const std::vector<RequestSpec> one = {workload.requests[static_cast<size_t>(s)]};
      for (TpotRow& row : mode_rows) {
        if (progress)
          std::fprintf(progress, "bench: TPOT mode %s, %s, sample %d/%d\n", std::string(SpecModeName(mode)).c_str(),
                       ImplKeyStr(row.impl).c_str(), s + 1, cfg.tpot_samples);
        TpotLoopOptions o;
        o.impl = row.impl;
        // One schedule for every implementation (the adaptive budget policy prices steps with the
        // fused costs), so that the runs of a sample differ only in their metadata path.
        o.scheduler = rc.scheduler;
        o.acceptance = acceptance;
        o.time_params = time_params;
        o.concurrency = 1;
        o.model_host = cfg.model_host;
        o.seed = cfg.seed + static_cast<uint64_t>(s);
        DS_ASSIGN_OR_RETURN(TpotLoopResult r, loop->Run(o, one));
        row.samples.push_back(std::move(r));
      }
    }
    for (TpotRow& r : mode_rows) rows.push_back(std::move(r));
  }

  // Aggregate: medians over the samples of each run's means; throughput pooled.
  ojson out = ojson::array();
  std::map<std::pair<SpecMode, Impl>, double> tpot;
  for (const TpotRow& row : rows) {
    std::vector<double> tp, tt, itl, al;
    double tokens = 0, duration = 0;
    int64_t steps = 0, syncs = 0, staging = 0, client = 0, late = 0, topb = 0;
    double host_us = 0, fwd_us = 0, launches = 0;
    for (const TpotLoopResult& r : row.samples) {
      tp.push_back(r.tpot_ms_mean);
      tt.push_back(r.ttft_ms_mean);
      itl.push_back(r.itl_ms_mean);
      al.push_back(r.mean_acceptance_length);
      tokens += static_cast<double>(r.output_tokens);
      duration += r.duration_s;
      steps += r.steps;
      syncs += r.impl_host_syncs;
      staging += r.staging_syncs;
      client += r.client_syncs;
      late += r.late_captures;
      topb += r.topb_launches;
      host_us += r.host_us_per_step * r.steps;
      fwd_us += r.forward_us_per_step * r.steps;
      launches += r.launches_per_step * r.steps;
    }
    const double median_tpot = MedianOf(tp);
    tpot[{row.mode, row.impl}] = median_tpot;
    const timing::SampleStats tps = timing::Summarize(tp);
    ojson j;
    j["mode"] = std::string(SpecModeName(row.mode));
    j["impl"] = ImplKeyStr(row.impl);
    j["tpot_ms"] = median_tpot;
    j["ttft_ms"] = MedianOf(tt);
    j["itl_ms"] = MedianOf(itl);
    j["output_tok_s"] = duration > 0 ? tokens / duration : 0.0;
    j["samples"] = static_cast<int64_t>(row.samples.size());
    j["tpot_ms_samples"] = tp;
    j["tpot_ms_p10"] = tps.p10_us;
    j["tpot_ms_p90"] = tps.p90_us;
    j["mean_acceptance_length"] = al.empty() ? 0.0 : std::accumulate(al.begin(), al.end(), 0.0) / al.size();
    const double n = steps > 0 ? static_cast<double>(steps) : 1.0;
    j["steps"] = steps;
    j["host_us_per_step"] = host_us / n;
    j["forward_standin_us_per_step"] = fwd_us / n;
    j["launches_per_step"] = launches / n;
    j["impl_host_syncs_per_step"] = static_cast<double>(syncs) / n;
    j["staging_syncs_per_step"] = static_cast<double>(staging) / n;
    j["client_syncs"] = client;
    j["late_captures"] = late;
    j["topb_launches"] = topb;
    out.push_back(std::move(j));
  }
  for (ojson& j : out) {
    const auto chain = tpot.find({*ParseSpecMode(j["mode"].get<std::string>()), Impl::kChain});
    j["reduction_vs_chain_pct"] = chain != tpot.end() && chain->second > 0
                                      ? 100.0 * (1.0 - j["tpot_ms"].get<double>() / chain->second)
                                      : 0.0;
  }

  absl::StrAppendFormat(md,
                        "## Batch-1 TPOT [ms/token], 512 in / 128 out, median of %d interleaved single-request "
                        "runs (reduction vs chain)\n\n",
                        cfg.tpot_samples);
  std::string head = "| Mode |", rule = "|---|";
  for (Impl impl : cfg.impls) {
    absl::StrAppend(&head, " ", ImplKeyStr(impl), " |");
    absl::StrAppend(&rule, "---:|");
  }
  absl::StrAppend(md, head, "\n", rule, "\n");
  for (SpecMode mode : cfg.tpot_modes) {
    std::string line = absl::StrCat("| ", SpecModeName(mode), " |");
    for (const ojson& j : out) {
      if (j["mode"] != std::string(SpecModeName(mode))) continue;
      absl::StrAppendFormat(&line, " %.3f", j["tpot_ms"].get<double>());
      if (j["impl"] != "chain" && tpot.count({mode, Impl::kChain}))
        absl::StrAppendFormat(&line, " (%.1f%%)", j["reduction_vs_chain_pct"].get<double>());
      absl::StrAppend(&line, " |");
    }
    absl::StrAppend(md, line, "\n");
  }
  absl::StrAppend(md, "\n| Mode | impl | TTFT ms | ITL ms | output tok/s | accept len | host µs/step | syncs/step (impl + staging) | late captures |\n",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const ojson& j : out)
    absl::StrAppendFormat(md, "| %s | %s | %.3f | %.3f | %.1f | %.2f | %.1f | %.2f | %d |\n",
                          j["mode"].get<std::string>(), j["impl"].get<std::string>(), j["ttft_ms"].get<double>(),
                          j["itl_ms"].get<double>(), j["output_tok_s"].get<double>(),
                          j["mean_acceptance_length"].get<double>(), j["host_us_per_step"].get<double>(),
                          j["impl_host_syncs_per_step"].get<double>() + j["staging_syncs_per_step"].get<double>(),
                          j["late_captures"].get<int64_t>());
  absl::StrAppend(md, "\nForward stand-in check (one spin kernel, CUDA events):");
  for (const ojson& s : standin)
    absl::StrAppendFormat(md, " requested %.1f µs -> %.1f µs;", s["requested_us"].get<double>(),
                          s["measured_us"].get<double>());
  absl::StrAppendFormat(md, "\nTime model of the loop: %s; host stand-in %s.\n\n", time_source,
                        cfg.model_host ? "on (time model's host terms)" : "off");

  ojson section;
  section["rows"] = std::move(out);
  section["setup"] = {{"modes", setup},
                      {"adaptive_budget_priced_with", "fused (the same schedule for every implementation)"},
                      {"time_model", time_source},
                      {"host_standin", cfg.model_host ? "model" : "off"},
                      {"forward_standin_check", standin},
                      {"method",
                       "TPOT loop (sim/tpot_loop.cuh): real scheduler, the implementation's metadata on the GPU "
                       "(graph replay when padded and capturable, else eager), a forward stand-in kernel of the time "
                       "model's forward time; times from CUDA events of each step's completion. tpot_ms / ttft_ms / "
                       "itl_ms: median over samples of each single-request run's mean; output_tok_s: tokens over "
                       "summed durations."}};
  return section;
}

}  // namespace dspark::sim::bench_internal
