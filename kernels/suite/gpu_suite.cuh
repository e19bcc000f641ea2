// The builder suite on a GPU, for the executor and `bench`: persistent device inputs, persistent
// outputs per implementation, scratch and pinned staging arenas, one stream, and CUDA graphs
// captured once per (impl, padded size key).
//
//   Stage(host_inputs)  copies one step's device view (host memory) into the persistent device
//                       inputs with ONE pinned cudaMemcpyAsync of a packed block, and keeps the host
//                       view (host qsl / seq_lens) for the host-boundary implementations.
//   Run(impl)           the suite eagerly through GpuBackend (counts launches as the CPU does).
//   Capture(impl)       device-chain / fused / fused-suite: one eager warm-up, then a capture on
//                       the suite's non-default stream, instantiated once per key: GraphKey
//                       (kernels/suite/graph_key.h) of staged_view(), the padded sizes and flags
//                       plus every host value the implementation reads, so none is frozen.
//   CaptureForTiming    any impl. chain and cached cannot be correct inside a graph: their host
//                       work (np.repeat, host totals, the pinned copies' contents) is frozen at
//                       capture, so a replay re-copies the capture-time host data, stale as soon as
//                       the step changes. Offered only so `bench` can time their GPU work the way
//                       the others are timed. Re-captures on every call (the host data changes)
//                       into an entry with its own pinned staging, updating the instantiated graph
//                       with cudaGraphExecUpdate when the topology allows, re-instantiating
//                       otherwise.
//   Replay(impl)        launches the graph of the staged key.
//   DownloadImage(impl) synchronizes and downloads the impl's whole output buffers (the tests'
//                       whole-buffer oracle compares them, tests/common/whole_buffer_check.cuh).
//                       Never inside a timed region. The GPU executor and `bench` check with
//                       GpuRegionCheck (kernels/suite/gpu_check.cuh: the defined regions only,
//                       compared on the device).
//   OverwriteDeviceQsl  rewrites the device query_start_loc in place (stale-boundary replay tests);
//                       device_query_start_loc() exposes it to a kernel that rewrites it on the
//                       suite's stream (the adaptive allocation).
// Every call returns absl::Status; CUDA failures name the call, file and line. Not thread-safe.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/batch.h"
#include "kernels/common/backend.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/suite/gpu_memory_plan.h"
#include "kernels/suite/suite_graph.cuh"
#include "kernels/suite/suite.h"

namespace dspark {

// The pre-flight of kernels/suite/gpu_memory_plan.h on the current device: cudaMemGetInfo's free
// memory (and the host's physical memory for the pinned part) against `plan`. ResourceExhausted
// with `who` and `hint` in the message when it does not fit; nothing is allocated either way.
absl::Status CheckFreeDeviceMemory(const GpuMemoryPlan& plan, absl::string_view who, absl::string_view hint);

class GpuSuite {
 public:
  // Allocates everything at `capacity` on the current device, after checking that it and
  // `output_sets` implementations' outputs (allocated on each one's first use) fit in the free
  // device memory (PlanGpuSuiteMemory); ResourceExhausted before any allocation otherwise.
  static absl::StatusOr<std::unique_ptr<GpuSuite>> Create(const GpuSuiteCapacity& capacity,
                                                          const ModelConsts& consts = {}, int output_sets = 1);
  ~GpuSuite();
  GpuSuite(const GpuSuite&) = delete;
  GpuSuite& operator=(const GpuSuite&) = delete;

  absl::Status Stage(const BatchInputs& host_inputs);
  absl::Status Run(Impl impl);
  absl::Status Capture(Impl impl);
  absl::Status CaptureForTiming(Impl impl);
  absl::Status Replay(Impl impl);
  // Nodes of the graph of the staged key; NotFound before it was captured.
  absl::StatusOr<SuiteGraph::NodeCounts> GraphNodes(Impl impl) const;
  // Graph statistics of the staged key (for tests of the update path).
  absl::StatusOr<const SuiteGraph*> Graph(Impl impl) const;

  absl::StatusOr<SuiteImage> DownloadImage(Impl impl);

  // The staged step for the region check (kernels/suite/gpu_check.cuh): sizes, flags, the host
  // view's copies, and device pointers to the persistent inputs (device memory, the truth).
  const BatchInputs& staged_view() const;
  // The device buffers of `impl`'s outputs; FailedPrecondition before it ran.
  absl::StatusOr<SuiteOutputs> device_outputs(Impl impl) const;
  const ModelConsts& consts() const;

  absl::Status OverwriteDeviceQsl(const std::vector<int32_t>& qsl);
  int32_t* device_query_start_loc() const;
  absl::Status Synchronize();

  cudaStream_t stream() const;
  const SuiteLayout& layout() const;
  // What the last Run / Capture / CaptureForTiming of `impl` issued (launches, copies, fills).
  const OpCounters& last_counters(Impl impl) const;
  // [bytes] held in device allocations now (outputs of the implementations run so far included);
  // equals PlanGpuSuiteMemory's device total once `output_sets` implementations have run.
  uint64_t device_bytes() const;

 private:
  struct State;
  explicit GpuSuite(std::unique_ptr<State> state);
  std::unique_ptr<State> d_;
};

}  // namespace dspark
