#include "kernels/suite/gpu_suite.cuh"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/backend_gpu.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"
#include "kernels/ops.cuh"
#include "kernels/suite/suite_impls.h"
#include "kernels/suite/gpu_suite_state.cuh"

namespace dspark {

using gpu_suite_internal::GraphEntry;
using gpu_suite_internal::Outputs;

// ---------------------------------------------------------------- GpuSuite

GpuSuite::GpuSuite(std::unique_ptr<State> state) : d_(std::move(state)) {}
GpuSuite::~GpuSuite() = default;

absl::StatusOr<std::unique_ptr<GpuSuite>> GpuSuite::Create(const GpuSuiteCapacity& capacity,
                                                           const ModelConsts& consts, int output_sets) {
  DS_ASSIGN_OR_RETURN(const GpuMemoryPlan plan, PlanGpuSuiteMemory(capacity, consts, output_sets));
  DS_RETURN_IF_ERROR(CheckFreeDeviceMemory(
      plan,
      absl::StrFormat("GpuSuite: max_tokens=%d, max_reqs=%d, max_bt_stride=%d", capacity.max_tokens,
                      capacity.max_reqs, capacity.max_bt_stride),
      "lower the capacity"));
  DS_RETURN_IF_ERROR(ValidateGpuSuiteCapacity(capacity, consts));
  try {
    auto st = std::make_unique<State>();
    st->consts = consts;
    st->capacity = capacity;
    st->layout = MakeSuiteLayout(capacity.max_tokens, capacity.max_reqs, capacity.max_bt_stride, consts);
    const GpuSuiteInputLayout in = MakeGpuSuiteInputLayout(capacity);
    const size_t reqs = static_cast<size_t>(capacity.max_reqs);
    st->qsl_off = in.qsl_off;
    st->seq_off = in.seq_off;
    st->slot_off = in.slot_off;
    st->bt_off = in.bt_off;
    st->input_bytes = in.bytes;
    st->inputs = DeviceBuffer<uint8_t>(st->input_bytes);
    st->inputs_staging = PinnedBuffer<uint8_t>(st->input_bytes);
    st->qsl_staging = PinnedBuffer<int32_t>(reqs + 1);
    st->arange = DeviceBuffer<int32_t>(static_cast<size_t>(st->layout.arange_len));
    st->scratch = DeviceBuffer<uint8_t>(MaxWorkspaceBytes(st->layout));
    st->staging = PinnedBuffer<uint8_t>(SuiteStagingBytes(st->layout));
    const ops::ArangeKernel iota{st->arange.get(), st->layout.arange_len, 0};
    CUDA_RETURN_IF_ERROR(LaunchFunctor(iota, iota.Shape(), st->stream.get()));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st->stream.get()));
    return std::unique_ptr<GpuSuite>(new GpuSuite(std::move(st)));
  } catch (const CudaError& e) {
    return absl::ResourceExhaustedError(absl::StrCat("GpuSuite::Create: ", e.what()));
  }
}

absl::Status GpuSuite::Stage(const BatchInputs& in) {
  State& st = *d_;
  const BatchSizes& z = in.sizes;
  DS_RETURN_IF_ERROR(ValidateBatchSizes(z));
  DS_RETURN_IF_ERROR(CheckFits(st.layout, z, st.consts));
  if (z.bt_stride > st.capacity.max_bt_stride)
    return absl::OutOfRangeError(absl::StrFormat("GpuSuite::Stage: bt_stride=%d exceeds max_bt_stride=%d",
                                                 z.bt_stride, st.capacity.max_bt_stride));
  if (in.device.query_start_loc == nullptr || (z.num_reqs > 0 && in.device.seq_lens == nullptr) ||
      (z.num_reqs > 0 && z.bt_stride > 0 && in.device.block_table == nullptr) ||
      (z.num_tokens > 0 && in.device.slot_mapping == nullptr))
    return absl::InvalidArgumentError("GpuSuite::Stage: a device-view array needed for these sizes is null");
  // The previous staging copy (and every earlier use of the packed block) has finished.
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.stream.get()));
  const size_t R = static_cast<size_t>(z.num_reqs), N = static_cast<size_t>(z.num_tokens);
  const size_t bt_cells = R * static_cast<size_t>(z.bt_stride);
  uint8_t* pinned = st.inputs_staging.get();
  std::memcpy(pinned + st.qsl_off, in.device.query_start_loc, 4 * (R + 1));
  if (R > 0) std::memcpy(pinned + st.seq_off, in.device.seq_lens, 4 * R);
  if (N > 0) std::memcpy(pinned + st.slot_off, in.device.slot_mapping, 8 * N);
  if (bt_cells > 0) std::memcpy(pinned + st.bt_off, in.device.block_table, 4 * bt_cells);
  const size_t bytes = bt_cells > 0 ? st.bt_off + 4 * bt_cells : st.slot_off + 8 * N;
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(st.inputs.get(), pinned, bytes, cudaMemcpyHostToDevice, st.stream.get()));

  st.host_qsl.assign(in.host.query_start_loc ? in.host.query_start_loc : nullptr,
                     in.host.query_start_loc ? in.host.query_start_loc + R + 1 : nullptr);
  st.host_seq_lens.assign(in.host.seq_lens ? in.host.seq_lens : nullptr,
                          in.host.seq_lens ? in.host.seq_lens + R : nullptr);
  st.host_qsl.reserve(1);
  st.host_seq_lens.reserve(1);
  st.view.sizes = z;
  st.view.fp8_prefill = in.fp8_prefill;
  st.view.causal = in.causal;
  st.view.full_graph = in.full_graph;
  st.view.adaptive = in.adaptive;
  st.view.device = DeviceBatch{st.dev_qsl(), st.dev_seq(), st.dev_bt(), st.dev_slot()};
  st.view.host = HostBatch{in.host.query_start_loc ? st.host_qsl.data() : nullptr,
                           in.host.seq_lens ? st.host_seq_lens.data() : nullptr};
  st.staged = true;
  return absl::OkStatus();
}

absl::Status GpuSuite::Run(Impl impl) {
  State& st = *d_;
  if (!st.staged) return absl::FailedPreconditionError("GpuSuite::Run: no step staged");
  // The staging arena restarts at its base: earlier pinned copies must have been read.
  if (ReadsHostBoundaries(impl)) CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.stream.get()));
  OpCounters counted;
  return st.Issue(impl, st.staging.get(), st.staging.size(), counted);
}

absl::Status GpuSuite::Capture(Impl impl) {
  State& st = *d_;
  if (!st.staged) return absl::FailedPreconditionError("GpuSuite::Capture: no step staged");
  if (!GraphCapturable(impl))
    return absl::FailedPreconditionError(absl::StrCat(
        "GpuSuite::Capture: ", std::string(ImplName(impl)),
        " reads host boundaries and would replay stale copies; use CaptureForTiming to time it"));
  const GraphKey key = st.Key(impl);
  auto it = st.graphs.find(key);
  if (it != st.graphs.end() && it->second.graph.valid()) return absl::OkStatus();
  // Warm-up: module loading and first touches happen outside the capture.
  DS_RETURN_IF_ERROR(Run(impl));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.stream.get()));
  GraphEntry& entry = st.graphs[key];
  return st.CaptureInto(impl, entry, st.staging.get(), st.staging.size());
}

absl::Status GpuSuite::CaptureForTiming(Impl impl) {
  State& st = *d_;
  if (GraphCapturable(impl)) return Capture(impl);
  if (!st.staged) return absl::FailedPreconditionError("GpuSuite::CaptureForTiming: no step staged");
  GraphEntry& entry = st.graphs[st.Key(impl)];
  if (!entry.graph.valid()) {
    DS_RETURN_IF_ERROR(Run(impl));
    try {
      entry.staging = std::make_unique<PinnedBuffer<uint8_t>>(SuiteStagingBytes(st.layout));
    } catch (const CudaError& e) {
      return absl::ResourceExhaustedError(absl::StrCat("GpuSuite::CaptureForTiming: ", e.what()));
    }
  }
  // Replays of the previous capture may still read this entry's pinned staging.
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.stream.get()));
  return st.CaptureInto(impl, entry, entry.staging->get(), entry.staging->size());
}

absl::Status GpuSuite::Replay(Impl impl) {
  State& st = *d_;
  if (!st.staged) return absl::FailedPreconditionError("GpuSuite::Replay: no step staged");
  const auto it = st.graphs.find(st.Key(impl));
  if (it == st.graphs.end() || !it->second.graph.valid())
    return absl::NotFoundError(absl::StrCat("GpuSuite::Replay: no graph of ", std::string(ImplName(impl)),
                                            " for the staged sizes; capture it first"));
  st.counters[impl.index()] = it->second.counters;
  return it->second.graph.Launch(st.stream.get());
}

absl::StatusOr<const SuiteGraph*> GpuSuite::Graph(Impl impl) const {
  const State& st = *d_;
  if (!st.staged) return absl::FailedPreconditionError("GpuSuite::Graph: no step staged");
  const auto it = st.graphs.find(st.Key(impl));
  if (it == st.graphs.end() || !it->second.graph.valid())
    return absl::NotFoundError(absl::StrCat("GpuSuite: no graph of ", std::string(ImplName(impl)), " for the staged sizes"));
  return &it->second.graph;
}

absl::StatusOr<SuiteGraph::NodeCounts> GpuSuite::GraphNodes(Impl impl) const {
  DS_ASSIGN_OR_RETURN(const SuiteGraph* g, Graph(impl));
  return g->CountNodes();
}

int32_t* GpuSuite::device_query_start_loc() const { return d_->dev_qsl(); }

absl::Status GpuSuite::Synchronize() {
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d_->stream.get()));
  return absl::OkStatus();
}

cudaStream_t GpuSuite::stream() const { return d_->stream.get(); }
const SuiteLayout& GpuSuite::layout() const { return d_->layout; }
const OpCounters& GpuSuite::last_counters(Impl impl) const { return d_->counters[impl.index()]; }

uint64_t GpuSuite::device_bytes() const {
  const State& st = *d_;
  uint64_t bytes = st.inputs.bytes() + st.arange.bytes() + st.scratch.bytes();
  for (const auto& o : st.outputs)
    if (o != nullptr) bytes += o->Bytes();
  return bytes;
}

}  // namespace dspark
