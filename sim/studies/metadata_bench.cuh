// Timing one builder suite per (case, implementation) on the GPU, shared by `bench` (the seed's
// metadata table) and `calibrate` (the CPU time model's metadata costs). Method: docs/design.md s.5 / s.8
// and sim/exec/gpu_timing.cuh:
//   method "graph": CUDA events around each replay of the suite's captured graph, enqueued right
//     behind the L2 flush (cold) so the host's launch call is hidden. device-chain, fused and
//     fused-suite are captured as an engine captures them. chain and cached cannot be correct in a
//     graph (their host work freezes at capture); they are captured anyway for timing only
//     (GpuSuite::CaptureForTiming), which is how a "Before" GPU time under graph replay is
//     obtained, and the row says so (graph_timing_only).
//   method "eager": CUDA events around the suite issued eagerly, started once the flush
//     completed, so the host's launch latency and host work between launches are inside: what an
//     eager path costs the GPU's timeline.
// Every row is also checked (GpuRegionCheck, after the timing): differing cells by kind.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/gpu_check.cuh"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/suite.h"
#include "nlohmann/json.hpp"
#include "sim/exec/cupti_timer.h"
#include "sim/exec/gpu_timing.cuh"

namespace dspark::sim {

// The seed's case names as the simulator's step cases spell them (bench.json, calibration).
std::string BenchCaseName(SeedCase c);
// Accepts either spelling ("verify" or "dspark_verify"); a comma list, or "all".
absl::StatusOr<std::vector<SeedCase>> ParseBenchCases(const std::string& list);

struct MetadataRow {
  std::string case_name;       // BenchCaseName
  SeedCase seed_case = SeedCase::kDecode;
  Impl impl = Impl::kFused;
  std::string method;          // "graph" or "eager"
  bool graph_timing_only = false;  // chain / cached graph rows: timing only, not correct in a graph
  int32_t batch = 0;           // [requests] real requests
  int32_t num_reqs = 0;        // R (padded)
  int32_t num_tokens = 0;      // N (padded)
  timing::SampleStats stats;   // [µs]
  std::string stop_reason;     // why sampling stopped: "noise", "time" or "max_samples" (a fixed count)
  double noise_pct = 0;        // [%] relative standard error of the mean of the samples
  timing::SampleStats cupti;   // [µs] graph rows: summed CUPTI durations of the graph's operations per
                               // replay, the seed's method (n = 0: not measured)
  int64_t launches = 0;        // graph: nodes of the captured graph; eager: launches and copies issued
  SuiteGraph::NodeCounts nodes;  // graph rows
  OpCounters counters;         // what one suite issued (counted by the backend)
  double host_us_median = 0;   // [µs] eager rows: host time of the eager call (host work, launches, syncs)
  double floor_us = 0;         // [µs] the same method's empty-kernel floor, same case, same run
  double speedup_vs_chain = 0; // baseline (role baseline, "chain") median / this median, same case and method (0: none)
  int64_t stale_host = 0, padding_residue = 0, bug = 0;  // differing cells by kind
  std::string check;           // "ok" or the mismatches, described
};

// Persistent buffers large enough for every batch.
GpuSuiteCapacity CapacityForBatches(const std::vector<CaseBatch>& batches);

// Stages `batch` and measures every implementation of `impls` by the graph method, and by the
// eager method too when `with_eager`; `check` (made for the suite's layout and capacity, one
// implementation) checks each row's outputs after its samples. `floors` are the case's floors (copied into the rows).
// The suite's stream is used throughout. With `cupti`, every graph row is also measured by the
// CUPTI method (the graph re-captured with tracing on, after the event samples and the check).
absl::StatusOr<std::vector<MetadataRow>> MeasureBatch(GpuSuite& suite, GpuRegionCheck& check, timing::L2Flusher& flusher,
                                                      const timing::TimingOptions& opt, const CaseBatch& batch,
                                                      const std::vector<Impl>& impls, bool with_eager,
                                                      const timing::Floors& floors,
                                                      timing::CuptiGraphTimer* cupti = nullptr);

// The CUPTI method's floor: one empty kernel in a graph, summed as the suites are.
absl::StatusOr<timing::SampleStats> MeasureCuptiFloor(timing::CuptiGraphTimer& cupti, cudaStream_t stream,
                                                      timing::L2Flusher& flusher, const timing::TimingOptions& opt);

// Fills speedup_vs_chain of every row from the baseline row (BaselineImpl()) of the same case and method.
void FillSpeedups(std::vector<MetadataRow>& rows);

// bench.json's metadata entry of a row (the plots' schema plus detail keys).
nlohmann::ordered_json MetadataRowJson(const MetadataRow& row);

}  // namespace dspark::sim
