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
#include "sim/studies/calibration_fit.cuh"
#include "sim/studies/tpot_loop.cuh"
#include "sim/studies/tpot_loop_model.h"
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

absl::StatusOr<ojson> RunTpot(const BenchConfig& cfg, const ojson& metadata_rows, std::string* md, std::FILE* progress) {
  static_assert(kCalibrationReferenceBatchForTpot == kCalibrationReferenceBatch);
  std::string time_source;
  absl::Status calib_status;
  const TimeModelParams calibration = LoadTimeParams(cfg.calibration, &time_source, &calib_status);
  DS_RETURN_IF_ERROR(calib_status);
  // The table: the time model's one composition (the CPU model's figure), with this run's
  // measured metadata µs in place of the calibration's; nothing else differs.
  std::string metadata_source;
  const std::vector<MeasuredMetadata> measured =
      MeasuredFromBenchRows(cfg.metadata ? metadata_rows : ojson::array(), cfg.batch, cfg.cold_l2, &metadata_source);
  const TimeModelParams time_params = WithMeasuredMetadata(calibration, measured);
  if (progress)
    std::fprintf(progress, "bench: TPOT table, composition over %d schedules per row (metadata: %s)\n",
                 cfg.tpot_model_samples, metadata_source.c_str());
  DS_ASSIGN_OR_RETURN(const std::vector<Batch1Row> composed,
                      AssembleBatch1Rows(calibration, measured, cfg.tpot_modes, cfg.impls, cfg.tpot_model_samples,
                                         cfg.seed));
  ojson out = Batch1RowsJson(composed, metadata_source);

  // The check: the GPU TPOT loop on the first tpot_samples of those schedules, with the same terms.
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
    for (double us : {time_params.drafter.fixed_us, time_params.target_roofline.floor_us}) {
      DS_ASSIGN_OR_RETURN(const double measured_us, MeasureForwardStandIn(us, stream.get()));
      standin.push_back({{"requested_us", us}, {"measured_us", measured_us}});
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
          std::fprintf(progress, "bench: TPOT loop, mode %s, %s, sample %d/%d\n", std::string(SpecModeName(mode)).c_str(),
                       ImplKeyStr(row.impl).c_str(), s + 1, cfg.tpot_samples);
        TpotLoopOptions o;
        o.impl = row.impl;
        // One schedule for every implementation (the adaptive budget policy prices steps with the
        // forward model's curves), so that the runs of a sample differ only in their metadata path.
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

  // The loop's figures beside the composition's on the same schedules: medians over the samples
  // of each run's mean; throughput pooled.
  std::map<std::pair<SpecMode, Impl>, double> loop_tpot;
  for (size_t i = 0; i < rows.size(); ++i) {
    const TpotRow& row = rows[i];
    ojson& j = out[i];
    std::vector<double> tp, tt, itl;
    double tokens = 0, duration = 0;
    int64_t steps = 0, syncs = 0, staging = 0, client = 0, late = 0, topb = 0;
    double host_us = 0, fwd_us = 0, launches = 0;
    for (const TpotLoopResult& r : row.samples) {
      tp.push_back(r.tpot_ms_mean);
      tt.push_back(r.ttft_ms_mean);
      itl.push_back(r.itl_ms_mean);
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
    DS_ASSIGN_OR_RETURN(const Batch1Tpot same,
                        ComposeBatch1Tpot(time_params, row.mode, row.impl, cfg.tpot_samples, cfg.seed));
    const double median_tpot = MedianOf(tp);
    loop_tpot[{row.mode, row.impl}] = median_tpot;
    const timing::SampleStats tps = timing::Summarize(tp);
    j["loop_tpot_ms"] = median_tpot;
    j["loop_composed_tpot_ms"] = same.median_tpot_ms;
    j["loop_minus_composed_us"] = 1e3 * (median_tpot - same.median_tpot_ms);
    j["ttft_ms"] = MedianOf(tt);
    j["itl_ms"] = MedianOf(itl);
    j["output_tok_s"] = duration > 0 ? tokens / duration : 0.0;
    j["samples"] = static_cast<int64_t>(row.samples.size());
    j["tpot_ms_samples"] = tp;
    j["tpot_ms_p10"] = tps.p10_us;
    j["tpot_ms_p90"] = tps.p90_us;
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
  }
  for (ojson& j : out) {
    const SpecMode mode = *ParseSpecMode(j["mode"].get<std::string>());
    const auto before = loop_tpot.find({mode, Impl::kDeviceChain});
    const auto self = loop_tpot.find({mode, *ParseImplKey(j["impl"].get<std::string>())});
    j["loop_reduction_vs_before_pct"] =
        before != loop_tpot.end() && before->second > 0 ? 100.0 * (1.0 - self->second / before->second) : 0.0;
  }

  const bool has_before = std::find(cfg.impls.begin(), cfg.impls.end(), Impl::kDeviceChain) != cfg.impls.end();
  absl::StrAppendFormat(md,
                        "## Batch-1 TPOT [ms/token], 512 in / 128 out: the time model's composition over %d "
                        "schedules%s\n\nMetadata µs: %s.\n\n",
                        cfg.tpot_model_samples, has_before ? " (reduction vs vllm-pre56562, the seed's Before)" : "",
                        metadata_source);
  absl::StrAppend(md, ImplTableHead("Mode", cfg.impls, [](Impl impl) { return std::vector<std::string>{ImplKeyStr(impl)}; }));
  for (SpecMode mode : cfg.tpot_modes) {
    std::string line = absl::StrCat("| ", SpecModeName(mode), " |");
    for (const ojson& j : out) {
      if (j["mode"] != std::string(SpecModeName(mode))) continue;
      absl::StrAppendFormat(&line, " %.3f", j["tpot_ms"].get<double>());
      if (has_before && j["impl"] != std::string(ImplName(Impl::kDeviceChain)))
        absl::StrAppendFormat(&line, " (%.1f%%)", j["reduction_vs_before_pct"].get<double>());
      absl::StrAppend(&line, " |");
    }
    absl::StrAppend(md, line, "\n");
  }
  absl::StrAppendFormat(md,
                        "\nThe check: the GPU TPOT loop, median of %d interleaved single-request runs, beside the "
                        "composition's median over the same schedules.\n\n",
                        cfg.tpot_samples);
  absl::StrAppend(md, "| Mode | impl | loop TPOT ms | composed ms | loop - composed µs | loop reduction vs (c) | TTFT ms | accept len | host µs/step | syncs/step (impl + staging) | late captures |\n",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const ojson& j : out)
    absl::StrAppendFormat(md, "| %s | %s | %.3f | %.3f | %+.1f | %.1f%% | %.3f | %.2f | %.1f | %.2f | %d |\n",
                          j["mode"].get<std::string>(), j["impl"].get<std::string>(), j["loop_tpot_ms"].get<double>(),
                          j["loop_composed_tpot_ms"].get<double>(), j["loop_minus_composed_us"].get<double>(),
                          j["loop_reduction_vs_before_pct"].get<double>(), j["ttft_ms"].get<double>(),
                          j["mean_acceptance_length"].get<double>(), j["host_us_per_step"].get<double>(),
                          j["impl_host_syncs_per_step"].get<double>() + j["staging_syncs_per_step"].get<double>(),
                          j["late_captures"].get<int64_t>());
  absl::StrAppend(md, "\nForward stand-in check (one spin kernel, CUDA events):");
  for (const ojson& s : standin)
    absl::StrAppendFormat(md, " requested %.1f µs -> %.1f µs;", s["requested_us"].get<double>(),
                          s["measured_us"].get<double>());
  absl::StrAppendFormat(md, "\nTime model: %s; loop host stand-in %s.\n\n", time_source,
                        cfg.model_host ? "on (time model's host terms)" : "off");

  ojson section;
  section["rows"] = std::move(out);
  section["setup"] = {{"modes", setup},
                      {"adaptive_budget_priced_with", "the forward model's cost curves (the same schedule for every implementation)"},
                      {"time_model", time_source},
                      {"metadata_source", metadata_source},
                      {"composed_samples", cfg.tpot_model_samples},
                      {"host_standin", cfg.model_host ? "model" : "off"},
                      {"forward_standin_check", standin},
                      {"method",
                       "tpot_ms: the time model's one composition (sim/studies/tpot_loop_model.h: TimeModel::Work on "
                       "the engine clock, the CPU model's figure), mean over composed_samples single-request schedules "
                       "(request s of batch1-512 alone, scheduler seed seed + s), with this run's measured metadata "
                       "µs (graph method, batch 16, L2 cold) in place of the calibration's. loop_*: the GPU TPOT loop "
                       "(sim/studies/tpot_loop.cuh) on the first `samples` of those schedules with the same terms, "
                       "its metadata run on the device; times from CUDA events of each step's completion; medians "
                       "over samples of each single-request run's mean; loop_composed_tpot_ms: the composition's "
                       "median over the same schedules."}};
  return section;
}

}  // namespace dspark::sim::bench_internal
