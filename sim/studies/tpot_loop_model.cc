#include "sim/studies/tpot_loop_model.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "sim/engine/engine.h"
#include "sim/model/acceptance.h"
#include "sim/observe/metrics.h"
#include "sim/studies/config.h"
#include "sim/studies/workload.h"

namespace dspark::sim {

TimeModelParams WithMeasuredMetadata(TimeModelParams params, const std::vector<MeasuredMetadata>& measured) {
  for (const MeasuredMetadata& m : measured) {
    ImplCost& cost = params.impls[m.impl.index()];
    cost.gpu_us[static_cast<int>(m.step_case)] = m.gpu_us;
    cost.launches[static_cast<int>(m.step_case)] = m.launches;
    cost.estimated = false;
  }
  return params;
}

absl::StatusOr<Batch1Tpot> ComposeBatch1Tpot(const TimeModelParams& params, SpecMode mode, Impl impl,
                                             int32_t samples, uint64_t seed) {
  if (samples < 1) return absl::InvalidArgumentError(absl::StrFormat("ComposeBatch1Tpot: samples=%d", samples));
  // The workload and acceptance exactly as bench's TPOT loop builds them (sim/cli/bench_tpot.cu).
  RunConfig rc;
  rc.workload = "batch1-512";
  rc.num_requests = samples;
  rc.seed = seed;
  rc.scheduler.mode = mode;
  DS_ASSIGN_OR_RETURN(const Workload workload, BuildWorkload(rc));
  DS_ASSIGN_OR_RETURN(const AcceptanceParams acceptance_params,
                      AcceptancePreset(workload.acceptance_preset, rc.scheduler.spec_k));
  const AcceptanceModel acceptance(acceptance_params, rc.scheduler.spec_k);
  const TimeModel time_model(params);
  EngineOptions options;
  options.concurrency = 1;
  options.time_impl = impl;
  Batch1Tpot out;
  double acceptance_sum = 0;
  for (int32_t s = 0; s < samples; ++s) {
    const std::vector<RequestSpec> one = {workload.requests[static_cast<size_t>(s)]};
    Engine engine(rc.scheduler, one, acceptance, time_model, options, seed + static_cast<uint64_t>(s));
    MetricsObserver metrics(one);
    engine.AddObserver(&metrics);
    DS_RETURN_IF_ERROR(engine.Run());
    nlohmann::json section;
    DS_RETURN_IF_ERROR(metrics.Finish(&section));
    out.sample_tpot_ms.push_back(metrics.serving_result().latency("tpot")->mean_ms);
    acceptance_sum += metrics.mean_acceptance_length();
    out.steps += engine.steps();
  }
  out.mean_tpot_ms = std::accumulate(out.sample_tpot_ms.begin(), out.sample_tpot_ms.end(), 0.0) / samples;
  std::vector<double> sorted = out.sample_tpot_ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  out.median_tpot_ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  out.mean_acceptance_length = acceptance_sum / samples;
  return out;
}

absl::StatusOr<std::vector<Batch1Row>> AssembleBatch1Rows(const TimeModelParams& calibration,
                                                          const std::vector<MeasuredMetadata>& measured,
                                                          const std::vector<SpecMode>& modes,
                                                          const std::vector<Impl>& impls, int32_t samples,
                                                          uint64_t seed) {
  const TimeModelParams params = WithMeasuredMetadata(calibration, measured);
  std::vector<Batch1Row> rows;
  for (SpecMode mode : modes) {
    const size_t first = rows.size();
    for (Impl impl : impls) {
      Batch1Row row;
      row.mode = mode;
      row.impl = impl;
      DS_ASSIGN_OR_RETURN(row.tpot, ComposeBatch1Tpot(params, mode, impl, samples, seed));
      rows.push_back(std::move(row));
    }
    const auto before = std::find_if(rows.begin() + static_cast<std::ptrdiff_t>(first), rows.end(),
                                     [](const Batch1Row& r) { return r.impl == Impl::kDeviceChain; });
    if (before == rows.end() || before->tpot.mean_tpot_ms <= 0) continue;
    const double before_ms = before->tpot.mean_tpot_ms;
    for (size_t i = first; i < rows.size(); ++i) {
      rows[i].has_before = true;
      rows[i].reduction_vs_before_pct = 100.0 * (1.0 - rows[i].tpot.mean_tpot_ms / before_ms);
    }
  }
  return rows;
}

std::vector<MeasuredMetadata> MeasuredFromBenchRows(const nlohmann::ordered_json& rows, int32_t batch,
                                                    bool cold_l2, std::string* source) {
  std::vector<MeasuredMetadata> out;
  if (batch != kCalibrationReferenceBatchForTpot || !cold_l2) {
    *source = absl::StrFormat("calibration (bench's metadata section was measured at batch %d, L2 %s, not as the "
                              "calibration's batch %d, L2 cold)",
                              batch, cold_l2 ? "cold" : "warm", kCalibrationReferenceBatchForTpot);
    return out;
  }
  for (const auto& r : rows) {
    if (!r.is_object() || r.value("method", "") != "graph") continue;
    const absl::StatusOr<Impl> impl = ParseImplKey(r.value("impl", ""));
    if (!impl.ok()) continue;
    int found = -1;
    for (int c = 0; c < kNumStepCases; ++c)
      if (r.value("case", "") == StepCaseName(static_cast<StepCase>(c))) found = c;
    if (found < 0 || !r.contains("gpu_us_median") || !r.contains("launches")) continue;
    out.push_back({*impl, static_cast<StepCase>(found), r["gpu_us_median"].get<double>(),
                   r["launches"].get<int32_t>()});
  }
  *source = out.empty() ? std::string("calibration (no metadata section measured)")
                        : absl::StrCat("measured (this run's metadata section, graph method, batch 16, L2 cold: ",
                                       out.size(), " (impl, case) pairs; the rest from the calibration)");
  return out;
}

nlohmann::ordered_json Batch1RowsJson(const std::vector<Batch1Row>& rows, const std::string& metadata_source) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Batch1Row& r : rows) {
    double chain_ms = 0;
    for (const Batch1Row& c : rows)
      if (c.mode == r.mode && c.impl == Impl::kChain) chain_ms = c.tpot.mean_tpot_ms;
    nlohmann::ordered_json j;
    j["mode"] = std::string(SpecModeName(r.mode));
    j["impl"] = std::string(ImplName(r.impl));
    j["tpot_ms"] = r.tpot.mean_tpot_ms;
    j["reduction_vs_before_pct"] = r.has_before ? r.reduction_vs_before_pct : 0.0;
    j["reduction_vs_chain_pct"] = chain_ms > 0 ? 100.0 * (1.0 - r.tpot.mean_tpot_ms / chain_ms) : 0.0;
    j["mean_acceptance_length"] = r.tpot.mean_acceptance_length;
    j["composed_samples"] = static_cast<int64_t>(r.tpot.sample_tpot_ms.size());
    j["composed_steps"] = r.tpot.steps;
    j["metadata_source"] = metadata_source;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace dspark::sim
