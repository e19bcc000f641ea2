// The GPU executor's results (its summary section, OUT/gpu_steps.csv, the device meta) and its
// registration as `run --executor gpu`'s stage (gpu_executor.cuh).
#include "sim/exec/gpu_executor_state.cuh"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"
#include "kernels/topb_alloc.cuh"
#include "sim/engine/step_executor.h"
#include "sim/exec/cuda_device.h"
#include "sim/exec/executor_registry.h"
#include "sim/exec/gpu_timing.cuh"
#include "sim/model/time_model.h"
#include "sim/results/result_files.h"

namespace dspark::sim {

using namespace gpu_executor_internal;

nlohmann::json GpuUsStatsJson(const std::vector<double>& samples) {
  const timing::SampleStats s = timing::Summarize(samples);
  return {{"median", s.median_us}, {"p10", s.p10_us}, {"p90", s.p90_us},
          {"mean", s.mean_us},     {"max", s.max_us}, {"samples", s.n}};
}

nlohmann::json GpuTopbJson(int64_t launches, int64_t host_qsl_stale_steps) {
  return {{"launches", launches},
          {"host_qsl_stale_steps", host_qsl_stale_steps},
          {"verified", "device qsl and kept counts equal the plan's device view at every launch"}};
}

nlohmann::json GpuExecutor::Summary() const {
  const State& st = *d_;
  nlohmann::json out;
  out["note"] =
      "Every step ran through the kernels on the GPU: graph-capturable implementations as one CUDA graph per padded "
      "size (replayed), unpadded steps and chain / cached eagerly. gpu_us: CUDA events around the suite, L2 " +
      std::string(st.options.cold_l2 ? "flushed before each" : "warm") +
      "; host_us: host time of the Run / Replay call. Outputs compared exactly with the CPU reference from the "
      "device truth over every defined region (section check: how, and its own cost): stale_host / "
      "padding_residue / bug count differing cells (a bug stops the run).";
  out["device"] = st.device_meta;
  out["l2"] = st.options.cold_l2 ? "cold" : "warm";
  out["flush_bytes"] = st.flusher ? st.flusher->bytes() : 0;
  out["steps"] = st.steps;
  out["checked"] = st.options.check;
  out["topb_on_device"] = GpuTopbJson(st.topb_launches, st.topb_stale_steps);
  const double steps = st.steps ? static_cast<double>(st.steps) : 1.0;
  // The executor's own staging: one pinned copy of the step's inputs, plus one of the top-B inputs
  // in adaptive verifications; not part of any implementation's counts.
  out["staging"] = {{"h2d_copies_per_step", (static_cast<double>(st.steps) + st.topb_launches) / steps},
                    {"host_us_per_step", st.stage_us / steps}};
  // The check's own cost, outside every timed suite: not part of any implementation's figures.
  if (st.options.check) {
    const RegionCheckStats c = st.check ? st.check->stats() : RegionCheckStats{};
    // The one method and order (gpu_executor.cuh, step 3), named so result files stay comparable.
    out["check"] = {{"method", "device"},
                    {"order", "prepare"},
                    {"host_us_per_step", st.check_us / steps},
                    {"reference_host_us_per_step", st.reference_us / steps},
                    {"device_compares", c.device_compares},
                    {"span_downloads", c.mirrored},
                    {"references_recomputed", c.references_computed},
                    {"bytes_up_per_step", static_cast<double>(c.bytes_up) / steps},
                    {"bytes_down_per_step", static_cast<double>(c.bytes_down) / steps}};
  }
  for (Impl impl : st.options.impls) {
    const ExecutorImplStats& s = st.stats.at(impl);
    const ImplTally& t = s.check;
    const auto per_step = [&](int64_t v) { return t.steps ? static_cast<double>(v) / t.steps : 0.0; };
    nlohmann::json j;
    for (int k = 0; k < 3; ++k) j[kMismatchKindKeys[k]] = t.cells[k];
    for (int k = 0; k < 3; ++k) j["steps_with"][kMismatchKindKeys[k]] = t.steps_with[k];
    j["reads_host_boundaries"] = ReadsHostBoundaries(impl);
    j["steps"] = t.steps;
    j["graph_replays"] = s.graph_replays;
    j["eager_runs"] = s.eager_runs;
    j["captures"] = s.captures;
    j["distinct_graph_keys"] = s.distinct_keys;
    j["graph_nodes_per_replay"] = s.graph_replays ? static_cast<double>(s.graph_nodes) / s.graph_replays : 0.0;
    j["launches_per_step"] = per_step(t.counters.Launches());
    j["kernels_per_step"] = per_step(t.counters.kernels);
    j["h2d_copies_per_step"] = per_step(t.counters.h2d_copies);
    j["d2h_copies_per_step"] = per_step(t.counters.d2h_copies);
    j["host_syncs_per_step"] = per_step(t.counters.host_syncs);
    j["staging_syncs_per_step"] = per_step(s.staging_syncs);
    j["host_array_ops_per_step"] = per_step(t.counters.host_array_ops);
    if (!s.gpu_us.empty()) j["gpu_us"] = GpuUsStatsJson(s.gpu_us);
    j["host_us"] = GpuUsStatsJson(s.host_us);
    for (const auto& [field, v] : t.cells_by_field)
      for (int k = 0; k < 3; ++k)
        if (v[k]) j["cells_by_field"][kMismatchKindKeys[k]][field] = v[k];
    if (!s.first_stale_host.empty()) j["first_stale_host"] = s.first_stale_host;
    for (int c = 0; c < kNumStepCases; ++c) {
      if (!t.steps_by_case[c]) continue;
      nlohmann::json cj;
      cj["steps"] = t.steps_by_case[c];
      cj["launches_per_step"] = static_cast<double>(t.launches_by_case[c]) / t.steps_by_case[c];
      if (!s.gpu_us_by_case[c].empty()) cj["gpu_us"] = GpuUsStatsJson(s.gpu_us_by_case[c]);
      for (int k = 0; k < 3; ++k) cj[kMismatchKindKeys[k]] = t.steps_with_by_case[c][k];
      j["by_case"][std::string(StepCaseName(static_cast<StepCase>(c)))] = std::move(cj);
    }
    out["impls"][std::string(ImplName(impl))] = std::move(j);
  }
  return out;
}

CheckTally GpuExecutor::Tally() const {
  CheckTally tally;
  for (Impl impl : d_->options.impls) tally.Of(impl) = d_->stats.at(impl).check;
  return tally;
}

std::shared_ptr<const GpuExecutorFigures> GpuExecutor::Figures() const {
  auto f = std::make_shared<GpuExecutorFigures>();
  f->steps = d_->steps;
  f->topb_launches = d_->topb_launches;
  f->topb_stale_steps = d_->topb_stale_steps;
  for (Impl impl : d_->options.impls) f->impls.emplace_back(impl, d_->stats.at(impl));
  return f;
}

std::string GpuExecutor::StepsCsv() const {
  std::string out =
      "step,case,impl,method,num_reqs,num_tokens,gpu_us,host_us,launches,kernels,h2d_copies,d2h_copies,d2d_copies,"
      "fills,host_syncs,staging_sync,stale_host,padding_residue,bug\n";
  for (const StepRow& r : d_->rows) {
    const OpCounters& c = r.counters;
    absl::StrAppendFormat(&out, "%d,%s,%s,%s,%d,%d,%s,%.3f,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d\n", r.step,
                          std::string(StepCaseName(r.step_case)), std::string(ImplName(r.impl)),
                          r.graph ? "graph" : "eager", r.num_reqs, r.num_tokens,
                          r.gpu_us < 0 ? std::string() : absl::StrFormat("%.3f", r.gpu_us), r.host_us, c.Launches(),
                          c.kernels, c.h2d_copies, c.d2h_copies, c.d2d_copies, c.fills, c.host_syncs,
                          r.staging_sync ? 1 : 0, r.cells[0], r.cells[1], r.cells[2]);
  }
  return out;
}

namespace {

std::string ClockMhz(cudaDeviceAttr attr, int device) {
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, attr, device) != cudaSuccess || khz <= 0) {
    (void)cudaGetLastError();
    return "unknown";
  }
  return absl::StrFormat("%d", khz / 1000);
}

}  // namespace

nlohmann::ordered_json GpuMetaJson(int device) {
  const timing::GpuMeta m = timing::ReadGpuMeta(device);
  nlohmann::ordered_json meta;
  meta["gpu"] = m.device_name;  // (one name key: the plots' titles join "device" and "gpu")
  meta["device_ordinal"] = device;
  meta["compute_capability"] = absl::StrFormat("%d.%d", m.cc_major, m.cc_minor);
  meta["sm_count"] = m.sm_count;
  meta["l2_bytes"] = m.l2_bytes;
  meta["driver"] = m.driver_version;
  meta["cuda_driver_api"] = m.cuda_driver_api;
  meta["cuda_runtime"] = m.cuda_runtime;
  meta["clocks"] = {{"sm_peak_mhz", ClockMhz(cudaDevAttrClockRate, device)},
                    {"memory_peak_mhz", ClockMhz(cudaDevAttrMemoryClockRate, device)},
                    {"current", "unknown (needs NVML; not read)"},
                    {"locked", "unknown"}};
  meta["date_utc"] = m.date_utc;
  return meta;
}

// ---------------------------------------------------------------- `run --executor gpu`

namespace {

// The GPU executor as a stage of the engine; writes the per-step series next to run's other
// files (OUT/gpu_steps.csv).
class GpuStepExecutor final : public StepExecutor {
 public:
  GpuStepExecutor(std::unique_ptr<GpuExecutor> executor, std::string out_dir)
      : executor_(std::move(executor)), out_dir_(std::move(out_dir)) {}
  absl::string_view name() const override { return "gpu_executor"; }
  // The engine built the arrays already; plan.Arrays() hands the same ones back.
  absl::Status Execute(const StepPlan& plan, const StepArrays& /*arrays*/) override {
    return executor_->Execute(plan);
  }
  absl::Status Finish(nlohmann::json* section) override {
    try {
      *section = executor_->Summary();
    } catch (const CudaError& e) {
      return absl::InternalError(absl::StrCat("gpu executor summary: ", e.what()));
    }
    std::error_code ec;
    std::filesystem::create_directories(out_dir_, ec);
    const std::string path = (std::filesystem::path(out_dir_) / "gpu_steps.csv").string();
    if (absl::Status s = WriteFileAtomically(path, executor_->StepsCsv()); !s.ok())
      return absl::Status(s.code(), absl::StrCat("gpu executor: ", s.message()));
    (*section)["steps_csv"] = "gpu_steps.csv";
    return absl::OkStatus();
  }
  const CheckTally* check_tally() const override {
    tally_ = executor_->Tally();
    return &tally_;
  }
  std::shared_ptr<const ExecutorFigures> figures() const override { return executor_->Figures(); }

 private:
  std::unique_ptr<GpuExecutor> executor_;
  std::string out_dir_;
  mutable CheckTally tally_;
};

const RegisterExecutor kRegisterGpuExecutor(
    "gpu-executor", kGpuExecutorOrder,
    [](const ExecutorRequest& request) -> absl::StatusOr<std::unique_ptr<StepExecutor>> {
      if (request.device != "gpu") return std::unique_ptr<StepExecutor>();
      if (absl::Status s = RequireCudaDevice(kGpuExecutorNeedsDevice); !s.ok())
        return absl::Status(s.code(), absl::StrCat("--executor gpu: ", s.message()));
      return MakeGpuStepExecutor(GpuExecutorOptionsFor(request), request.out_dir);
    });

}  // namespace

GpuExecutorOptions GpuExecutorOptionsFor(const ExecutorRequest& request) {
  GpuExecutorOptions options;
  options.impls = request.impls;
  options.capacity = CapacityFor(request.scheduler);
  options.cold_l2 = request.gpu_cold_l2;
  options.consts = request.consts;
  return options;
}

absl::StatusOr<std::unique_ptr<StepExecutor>> MakeGpuStepExecutor(const GpuExecutorOptions& options,
                                                                  std::string out_dir) {
  DS_ASSIGN_OR_RETURN(std::unique_ptr<GpuExecutor> executor, GpuExecutor::Create(options));
  return std::unique_ptr<StepExecutor>(std::make_unique<GpuStepExecutor>(std::move(executor), std::move(out_dir)));
}

}  // namespace dspark::sim
