// The GPU executor's check of a staged step after its implementations ran (never inside a timed
// region): the same SuiteRunResult per implementation as the whole-buffer check (tests/common/whole_buffer_check.cuh), which downloads
// every whole output buffer (about 42 MB per implementation at a 16k capacity), at the cost of
// the step's defined regions:
//   1. download the device truth of the step's inputs (step-sized) into pinned memory;
//   2. the reference of the truth: the caller's, computed from the plan's device view (while
//      the GPU ran), when the truth equals that view byte for byte; computed here otherwise;
//   3. upload the compare tasks of every implementation and every defined region's reference
//      cells (kernels/suite/gpu_check_plan.h) with one copy, count each region's differing cells
//      on the device (kernels/suite/gpu_compare.cuh) and download the counts: one
//      synchronization for the whole step;
//   4. an implementation with a non-zero count: download the spans of its differing regions
//      (one async copy each, one synchronization) into a pinned mirror, write the reference's
//      cells for its equal ones, and run CompareSuite on it, which gives the FieldMismatch list
//      (first index, values, stale-host / padding-residue / bug) it gives on the whole buffers;
//      its counts must equal the device's (an Internal error otherwise).
// With on_device false, step 3 is skipped and step 4 downloads every region of every
// implementation.
// Every CUDA call returns through the check macros. Not thread-safe.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/suite/gpu_memory_plan.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/regions.h"
#include "kernels/suite/suite.h"

namespace dspark {

struct RegionCheckStats {
  int64_t steps = 0;
  int64_t device_compares = 0;     // steps whose counts came from the device compare
  int64_t mirrored = 0;            // (step, implementation) pairs whose spans were downloaded
  int64_t references_computed = 0; // steps whose reference was computed here (no usable hint)
  uint64_t bytes_up = 0, bytes_down = 0;  // [bytes] tasks + reference up; truth, counts, spans down
  double host_us = 0;              // [µs] wall time inside Prepare, Enqueue and Finish, summed
};

class GpuRegionCheck {
 public:
  // What Create allocates for `impls` implementations (device and pinned), into `plan`.
  static void AddToPlan(const SuiteLayout& layout, const GpuSuiteCapacity& capacity, int impls,
                        GpuMemoryPlan& plan);
  static absl::StatusOr<std::unique_ptr<GpuRegionCheck>> Create(const SuiteLayout& layout,
                                                                const GpuSuiteCapacity& capacity, int impls,
                                                                bool on_device = true);

  // Checks `impls` (each must have run on the staged step) against the reference of the device
  // truth. `hint_want`, when given, is ComputeSuiteReference of `hint_in` (the staged sizes and
  // flags, host-readable device arrays) on suite.layout(); it is used when the truth equals
  // hint_in's device arrays. Results in the order of `impls`.
  absl::StatusOr<std::vector<SuiteRunResult>> Check(GpuSuite& suite, const std::vector<Impl>& impls,
                                                    const SuiteReference* hint_want = nullptr,
                                                    const BatchInputs* hint_in = nullptr);
  // Check in parts, so a caller can do its own waiting in between (the executor reads its timing
  // events): Prepare does the host work only (the implementations' outputs, and with a usable
  // hint the regions, the reference pack and the compare tasks in pinned staging); Enqueue puts
  // step 1 and, with a usable hint, step 3 on the suite's stream without waiting; Finish
  // synchronizes once and does the rest. Begin is Prepare then Enqueue. `suite`, `hint_want` and
  // `hint_in` must outlive Finish, and nothing else may be enqueued on the suite's stream between
  // Enqueue and Finish. Out of order (a second Prepare before Finish, Finish without Enqueue) is
  // FailedPrecondition.
  absl::Status Prepare(GpuSuite& suite, const std::vector<Impl>& impls, const SuiteReference* hint_want = nullptr,
                       const BatchInputs* hint_in = nullptr);
  absl::Status Enqueue();
  absl::Status Begin(GpuSuite& suite, const std::vector<Impl>& impls, const SuiteReference* hint_want = nullptr,
                     const BatchInputs* hint_in = nullptr);
  absl::StatusOr<std::vector<SuiteRunResult>> Finish();
  const RegionCheckStats& stats() const { return stats_; }
  uint64_t device_bytes() const { return device_.bytes() + counts_.bytes(); }

 private:
  GpuRegionCheck() = default;
  // What Prepare leaves for Enqueue and Finish.
  struct Pending {
    GpuSuite* suite = nullptr;  // nullptr: no check prepared
    bool enqueued = false;
    std::vector<Impl> impls;
    std::vector<SuiteOutputs> outs;
    BatchInputs truth;          // the staged step, its device arrays in truth_ (downloaded by Enqueue)
    const SuiteReference* hint_want = nullptr;
    const BatchInputs* hint_in = nullptr;
    std::vector<SuiteRegion> regions;  // of the hint, or (Finish) of the truth
    bool counts_staged = false;        // StageCounts wrote the upload for `regions`
    uint64_t up_bytes = 0;             // [bytes] of upload_ to send
    size_t num_tasks = 0;
    int64_t max_cells = 0;             // the largest task's cells (the compare's grid)
    size_t num_counts = 0;             // counts enqueued into counts_host_
    double host_us = 0;                // [µs] Prepare's and Enqueue's wall time
  };
  // Step 3's host part: the reference pack and every implementation's compare tasks for p's
  // regions, written into upload_ (no CUDA call).
  absl::Status StageCounts(Pending& p, const ModelConsts& consts);
  // Step 3's device part on `s`: upload, zero the counts, compare, download the counts (no sync).
  absl::Status EnqueueCounts(cudaStream_t s, Pending& p);

  SuiteLayout layout_;
  int impls_ = 0;
  bool on_device_ = true;
  GpuSuiteInputLayout inputs_;
  uint64_t tasks_bytes_ = 0;         // [bytes] the task table's room, 16-aligned
  DeviceBuffer<uint8_t> device_;     // tasks | reference pack
  DeviceBuffer<unsigned long long> counts_;
  PinnedBuffer<uint8_t> upload_;     // its staging
  PinnedBuffer<unsigned long long> counts_host_;
  PinnedBuffer<uint8_t> truth_;      // the step's inputs, GpuSuite's packed layout
  PinnedBuffer<uint8_t> mirror_;     // one implementation's regions' spans
  RegionCheckStats stats_;
  Pending p_;
};

}  // namespace dspark
