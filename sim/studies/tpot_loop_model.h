// The batch-1 TPOT table's one composition of the time model's terms (docs/models.md,
// "Time model"): the CPU engine clock (sim/model/engine_clock.h) over TimeModel::Work's terms
// (the scheduler's host work, the eager builders' dispatch, launch gaps and syncs, the graph
// launch, the forward, the drafter's builders in draft steps, the adaptive confidence sync and
// the batch queue's host/GPU overlap). The CPU model's batch-1 figure and `bench`'s batch-1 table
// are both this function; the only difference between them is where the metadata GPU µs (and the
// suites' launch counts) come from: the calibration file, or bench's own metadata section
// measured on the GPU in the same run (WithMeasuredMetadata). bench's GPU TPOT loop
// (sim/studies/tpot_loop.cuh) is run beside it as the check that the terms compose on a device
// as the clock says.
#pragma once

#include <cstdint>
#include <vector>

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sim/model/spec_mode.h"
#include "sim/model/time_model.h"

namespace dspark::sim {

// The batch at which the calibration's metadata costs are measured (kCalibrationReferenceBatch of
// sim/studies/calibration_fit.cuh; bench_tpot.cu asserts they agree).
inline constexpr int32_t kCalibrationReferenceBatchForTpot = 16;

// One metadata cost measured on the GPU: bench's metadata row of (impl, case), graph method,
// at the calibration's reference batch (16) and L2 mode (cold): the measurement the calibration
// file's `metadata.<impl>.gpu_us.<case>` and `launches.<case>` hold.
struct MeasuredMetadata {
  Impl impl = Impl::kFused;
  StepCase step_case = StepCase::kDecode;
  double gpu_us = 0;     // [µs] median GPU time of the builder suite
  int32_t launches = 0;  // eager launches + copies of the suite (its graph's nodes)
};

// `params` with the measured µs and launch counts in place of the calibration's for every
// (impl, case) measured; every other term (the per-token slope, host, engine, forward) is kept.
TimeModelParams WithMeasuredMetadata(TimeModelParams params, const std::vector<MeasuredMetadata>& measured);

struct Batch1Tpot {
  std::vector<double> sample_tpot_ms;  // [ms] per sample, the request's TPOT
  double mean_tpot_ms = 0;             // [ms] over the samples
  double median_tpot_ms = 0;           // [ms] over the samples (bench's loop reports medians)
  double mean_acceptance_length = 0;   // over the samples
  int64_t steps = 0;
};

// The batch-1 512/128 TPOT of (mode, impl) on the CPU engine with `params`. Sample s is request s
// of the batch1-512 workload built with `seed`, run alone at concurrency 1 with scheduler seed
// `seed + s`: the schedules bench's GPU TPOT loop runs, step for step.
absl::StatusOr<Batch1Tpot> ComposeBatch1Tpot(const TimeModelParams& params, SpecMode mode, Impl impl,
                                             int32_t samples, uint64_t seed);

struct Batch1Row {
  SpecMode mode = SpecMode::kNone;
  Impl impl = Impl::kFused;
  Batch1Tpot tpot;
  // 100 * (1 - tpot / tpot of (c) vllm-pre56562), the seed's Before -> After column; 0 without (c).
  double reduction_vs_before_pct = 0;
  bool has_before = false;
};

// bench's batch-1 rows: ComposeBatch1Tpot over WithMeasuredMetadata(calibration, measured) for
// every (mode, impl), in that order. With `measured` empty the figures are the CPU model's.
absl::StatusOr<std::vector<Batch1Row>> AssembleBatch1Rows(const TimeModelParams& calibration,
                                                          const std::vector<MeasuredMetadata>& measured,
                                                          const std::vector<SpecMode>& modes,
                                                          const std::vector<Impl>& impls, int32_t samples,
                                                          uint64_t seed);

// bench's metadata rows (bench.json "metadata") as MeasuredMetadata: the graph method's rows, when
// the section was measured as the calibration is (batch 16, L2 cold); otherwise none. *source
// says where the batch-1 table's metadata µs then come from.
std::vector<MeasuredMetadata> MeasuredFromBenchRows(const nlohmann::ordered_json& rows, int32_t batch,
                                                    bool cold_l2, std::string* source);

// The rows as bench.json's "tpot" holds them (bench adds its GPU loop's check to each): mode,
// impl, tpot_ms (the composition's mean), reduction_vs_before_pct, reduction_vs_chain_pct,
// mean_acceptance_length, composed_samples, composed_steps, metadata_source.
nlohmann::ordered_json Batch1RowsJson(const std::vector<Batch1Row>& rows, const std::string& metadata_source);

}  // namespace dspark::sim
