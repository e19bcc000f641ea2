// The soak: a long CPU-mode simulation, run twice with the same seed in one process, that
// checks the simulator stays correct, deterministic and bounded in memory.
//
// Workload: a closed loop of repeated batches. Batch b is a fresh engine over `batch_requests`
// requests of the preset, generated from the batch seed SplitMix64(SplitMix64(seed) + b), with
// the client's concurrency limit; batches follow one another until a run has at least `steps`
// steps. A batch ends only when all its requests finished, so every batch gets the full
// end-of-run checks, and memory is bounded by one batch (per-request state, the per-step and
// per-token series of the metrics observer) whatever `steps` is.
//
// Every step goes through the invariant checker (sim/observe/invariants.h), a digest observer and the
// metrics observer (which checks every finished request emitted exactly its output length; it
// keeps per-request records and per-token ITL samples, bounded by the batch, and no per-step
// series since the soak writes no steps.csv); every `rss_sample_every` steps VmRSS is read from
// /proc/self/status. The metadata check is off (speed).
//
// Digest: a 64-bit hash (SplitMix64 chain) of every step's plan summary (times as IEEE bits),
// every request event, and each batch's metrics summary (summary.json's metrics section,
// serialised). The two runs must give the same digest per batch and in total.
//
// RSS: VmRSS is sampled every `rss_sample_every` steps over both runs (one step count, run 2
// continuing run 1) and at the end of every batch. Within a batch RSS rises (the metrics
// observer's per-token series) and falls when the batch ends, so the check compares
// peaks: growth = the largest sample after warm-up (the rest of run 1 and all of run 2) - the
// largest sample during warm-up (the first ceil(steps / 10) steps of run 1; with the defaults
// about 10 batches). The soak fails when growth > rss_limit_kib (default 2 MiB: about 2 bytes
// per step of a 1M-step run). RunSoak pins glibc's malloc thresholds (see soak.cc) so that RSS
// follows live memory rather than the allocator's adaptive mmap threshold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sim/model/scheduler.h"

namespace dspark::sim {

// The scheduler defaults of `run` (adaptive, K = 5, 256 sequences, 16384 tokens) with a KV pool
// of 1536 blocks: tight enough for preemptions (about 1% of steps of the chat preset at
// concurrency 64), small enough that the per-step KV partition check stays cheap.
SchedulerConfig SoakSchedulerDefaults();

struct SoakOptions {
  int64_t steps = 1000000;          // [steps] at least this many per run
  uint64_t seed = 0;
  std::string workload = "chat";    // preset of every batch
  int64_t batch_requests = 4096;    // [requests] per batch (one engine each)
  int32_t concurrency = 64;         // [requests in flight] client limit, 0 = none
  SchedulerConfig scheduler = SoakSchedulerDefaults();
  int64_t rss_sample_every = 10000; // [steps]
  int64_t kv_check_every = 1;       // [steps] KV partition check period
  int64_t rows_check_every = 64;    // [steps] per-row check period (materialises arrays), 0 = never
  int64_t rss_limit_kib = 2048;     // [KiB] allowed growth of the RSS peak after warm-up
  std::string calibration;          // time-model JSON; empty: workloads/calibration_h200.json
  std::vector<std::string> argv;    // for the meta block

  absl::Status Validate() const;
};

// One run's figures.
struct SoakRun {
  int64_t steps = 0;
  int64_t batches = 0;
  int64_t requests_finished = 0;
  int64_t output_tokens = 0;
  int64_t preemptions = 0;
  double simulated_s = 0.0;  // [s] summed over batches
  double wall_s = 0.0;       // [s] host wall-clock time of the run
  uint64_t digest = 0;
  std::vector<uint64_t> batch_digests;
  bool invariants_ok = true;
  std::string first_violation;  // empty when invariants_ok
  std::string error;            // the run stopped for another reason (e.g. no /proc)
  int64_t kv_checks = 0, row_checks = 0;
};

struct RssSample {
  int64_t step;  // global step count (run 2 continues after run 1)
  int64_t kib;   // [KiB] VmRSS
};

struct SoakResult {
  SoakRun runs[2];
  bool identical = false;
  int64_t first_differing_batch = -1;
  std::vector<RssSample> rss;   // downsampled to at most kMaxRssSamples
  int64_t warmup_step = 0;          // global step that ends warm-up (10% of run 1)
  int64_t rss_at_warmup_kib = 0;    // the sample at warmup_step
  int64_t rss_warmup_peak_kib = 0;  // largest sample up to warmup_step
  int64_t rss_max_after_warmup_kib = 0;
  int64_t rss_end_run1_kib = 0, rss_end_kib = 0, rss_max_kib = 0;
  int64_t rss_growth_kib = 0;       // rss_max_after_warmup_kib - rss_warmup_peak_kib
  std::string allocator_note;       // how the allocator was set up for the measurement
  bool rss_ok = false;
  std::vector<std::string> failures;  // empty when the soak passed
  bool ok() const { return failures.empty(); }
  nlohmann::json ToJson(const SoakOptions& options) const;
};

inline constexpr size_t kMaxRssSamples = 1024;

// VmRSS of this process [KiB] from /proc/self/status.
absl::StatusOr<int64_t> ReadVmRssKiB();

// Runs the soak. A non-OK status is a setup error (bad options, missing calibration); check
// failures are reported in the result.
absl::StatusOr<SoakResult> RunSoak(const SoakOptions& options);

}  // namespace dspark::sim
