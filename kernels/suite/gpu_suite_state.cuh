// GpuSuite's state (kernels/suite/gpu_suite*.cu only): the persistent inputs, the outputs per
// implementation, the staged view and the graphs by key.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kernels/common/backend_gpu.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/common/status_macros.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/gpu_suite_outputs.cuh"
#include "kernels/suite/graph_key.h"
#include "kernels/suite/suite_impls.h"

namespace dspark {

namespace gpu_suite_internal {


struct GraphEntry {
  SuiteGraph graph;
  std::unique_ptr<PinnedBuffer<uint8_t>> staging;  // CaptureForTiming of chain / cached only
  OpCounters counters;
};

}  // namespace gpu_suite_internal

using gpu_suite_internal::GraphEntry;
using gpu_suite_internal::Outputs;
struct GpuSuite::State {
  ModelConsts consts;
  GpuSuiteCapacity capacity;
  SuiteLayout layout;
  CudaStream stream;

  // Persistent device inputs, one packed block: qsl | seq_lens | slot_mapping | block_table.
  size_t qsl_off = 0, seq_off = 0, slot_off = 0, bt_off = 0, input_bytes = 0;
  DeviceBuffer<uint8_t> inputs;
  PinnedBuffer<uint8_t> inputs_staging;
  PinnedBuffer<int32_t> qsl_staging;  // OverwriteDeviceQsl

  DeviceBuffer<int32_t> arange;   // [layout.arange_len] 0, 1, ...
  DeviceBuffer<uint8_t> scratch;  // the backends' scratch arena
  PinnedBuffer<uint8_t> staging;  // the eager backends' pinned staging arena

  std::vector<std::unique_ptr<Outputs>> outputs = std::vector<std::unique_ptr<Outputs>>(NumImpls());  // by Impl::index()
  std::vector<OpCounters> counters = std::vector<OpCounters>(NumImpls());

  bool staged = false;
  BatchInputs view;  // device pointers: `inputs`; host pointers: the vectors below
  std::vector<int32_t> host_qsl, host_seq_lens;
  std::map<GraphKey, GraphEntry> graphs;
  std::unique_ptr<SideStreams> side;  // the branches of vLLM's recorded builds (vllm-0.34)

  int32_t* dev_qsl() const { return reinterpret_cast<int32_t*>(inputs.get() + qsl_off); }
  int32_t* dev_seq() const { return reinterpret_cast<int32_t*>(inputs.get() + seq_off); }
  int64_t* dev_slot() const { return reinterpret_cast<int64_t*>(inputs.get() + slot_off); }
  int32_t* dev_bt() const { return reinterpret_cast<int32_t*>(inputs.get() + bt_off); }

  // The staged step's key of `impl`'s graph (kernels/suite/graph_key.h).
  GraphKey Key(Impl impl) const { return MakeGraphKey(impl, view); }

  absl::StatusOr<Outputs*> OutputsFor(Impl impl) {
    std::unique_ptr<Outputs>& o = outputs[impl.index()];
    if (o == nullptr) {
      try {
        o = std::make_unique<Outputs>(layout);
      } catch (const CudaError& e) {
        return absl::ResourceExhaustedError(absl::StrCat("GpuSuite: output buffers: ", e.what()));
      }
      DS_RETURN_IF_ERROR(o->Poison(stream.get()));
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
    }
    return o.get();
  }

  SuiteStep Step(const Outputs& o) const {
    SuiteStep s;
    s.in = &view;
    s.layout = layout;
    s.consts = consts;
    s.out = o.view;
    s.arange = arange.get();
    return s;
  }

  // Runs `impl` on the stream, possibly under capture, through a fresh backend over `pinned`.
  absl::Status Issue(Impl impl, uint8_t* pinned, size_t pinned_bytes, OpCounters& counted) {
    DS_ASSIGN_OR_RETURN(Outputs * o, OutputsFor(impl));
    GpuBackend be(stream.get(), scratch.get(), scratch.size(), pinned, pinned_bytes);
    const ImplInfo& info = impl.info();
    if (info.execution == MetadataExecution::kRecordedUniformDecode) {  // vLLM's concurrent branches
      if (side == nullptr) {
        try {
          side = std::make_unique<SideStreams>(4);
        } catch (const CudaError& e) {
          return absl::ResourceExhaustedError(absl::StrCat("GpuSuite: side streams: ", e.what()));
        }
      }
      be.AttachSideStreams(side.get());
    }
    const SuiteStep step = Step(*o);
    absl::Status s = ValidateSuiteStep(impl, step);
    if (s.ok() && info.gpu == nullptr)
      s = absl::FailedPreconditionError(
          absl::StrCat("GpuSuite: ", info.name, " has no GPU entry (its file was not compiled by nvcc)"));
    if (s.ok()) s = info.gpu(be, step);
    counted = be.counters();
    counters[impl.index()] = be.counters();
    return s;
  }

  absl::Status CaptureInto(Impl impl, GraphEntry& entry, uint8_t* pinned, size_t pinned_bytes) {
    // Allocate outside the capture: a lazy cudaMalloc inside it would be an error.
    DS_RETURN_IF_ERROR(OutputsFor(impl).status());
    CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
    OpCounters counted;
    const absl::Status run = Issue(impl, pinned, pinned_bytes, counted);
    cudaGraph_t captured = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream.get(), &captured);
    if (!run.ok() || end != cudaSuccess) {
      if (captured != nullptr) CUDA_CHECK_NOTHROW(cudaGraphDestroy(captured));
      (void)cudaGetLastError();
      return run.ok() ? CudaStatus(end, "cudaStreamEndCapture", __FILE__, __LINE__) : run;
    }
    DS_RETURN_IF_ERROR(entry.graph.Adopt(captured));
    entry.counters = counted;
    return absl::OkStatus();
  }
};

}  // namespace dspark
