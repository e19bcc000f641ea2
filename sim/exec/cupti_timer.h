// The seed's "CUPTI GPU timings": the summed GPU durations of the kernels, copies and fills that
// CUDA graphs ran, read from CUPTI's activity records (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
// MEMCPY, MEMSET). It is the time the GPU spent inside the builders' operations, without the gaps
// between graph nodes, which is how a torch-profiler (CUPTI) trace sums a builder's "GPU time".
// The event method (sim/exec/gpu_timing.cuh) measures the replay's wall span instead; bench
// reports both side by side.
//
// Records are taken only from graph launches (graphId != 0), so the cold-L2 flush (an eager
// memset on the same stream) is never counted. One process may hold one timer at a time: CUPTI's
// activity buffers are process-wide.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace dspark::timing {

class CuptiGraphTimer {
 public:
  // Fails (with CUPTI's message) where CUPTI is not built in or refuses activity tracing.
  static absl::StatusOr<std::unique_ptr<CuptiGraphTimer>> Create();
  ~CuptiGraphTimer();
  CuptiGraphTimer(const CuptiGraphTimer&) = delete;
  CuptiGraphTimer& operator=(const CuptiGraphTimer&) = delete;

  // Starts tracing: graphs instantiated from here on are traced. Capture after Enable.
  absl::Status Enable();
  // Flushes what the GPU finished and drops it (call after a stream synchronize).
  absl::Status Discard();
  // Flushes what the GPU finished since the last Discard/Take (call after a synchronize) and
  // returns the summed duration [µs] of the graph-launched records, and their count.
  struct Sum {
    double us = 0;         // [µs] summed record durations
    int64_t records = 0;   // kernels + copies + fills
  };
  absl::StatusOr<Sum> Take();
  // Stops tracing (graphs instantiated before keep no extra cost once disabled).
  absl::Status Disable();

 private:
  CuptiGraphTimer() = default;
  bool enabled_ = false;
};

}  // namespace dspark::timing
