#include "kernels/suite/gpu_suite.cuh"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/backend_gpu.cuh"
#include "kernels/common/byte_math.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"
#include "kernels/ops.cuh"
#include "kernels/suite/suite_impls.h"

namespace dspark {

namespace gpu_suite_internal {

constexpr int32_t kPoison = -99;

// Fills an int64 buffer (the poison of the int64 slot buffers; outside every counted suite run).
struct FillI64Kernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  int64_t* dst;   // [count]
  int64_t value;
  size_t count;   // [elements]
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const size_t i = static_cast<size_t>(c.block) * c.block_dim + c.thread;
    if (i < count) dst[i] = value;
  }
};

LaunchShape FillShape(size_t count) { return {static_cast<int32_t>((count + 255) / 256), 256}; }

// One implementation's persistent output buffers on the device.
struct Outputs {
  DeviceBuffer<int32_t> token_to_req, swa_lens, swa_indices, swa_nc, swa_gather;
  DeviceBuffer<int64_t> mla_r1, mla_r2, ring, r2_slots;
  DeviceBuffer<int32_t> r2_csl;
  DeviceBuffer<int32_t> seq_out[2], bt_out[2], decode_lens[2], indices[2], per_req[2];
  DeviceBuffer<int32_t> pf_cu[2], pf_rows[2], pf_ks[2], pf_ke[2];  // the indexer prefill chunks
  DeviceBuffer<int32_t> seg_qsl, seg_seq_lens, seg_count;
  SuiteOutputs view;

  explicit Outputs(const SuiteLayout& l) {
    const size_t cap = static_cast<size_t>(l.token_capacity);
    token_to_req = DeviceBuffer<int32_t>(cap);
    swa_lens = DeviceBuffer<int32_t>(cap);
    swa_indices = DeviceBuffer<int32_t>(cap * static_cast<size_t>(l.window));
    swa_nc = DeviceBuffer<int32_t>(cap * static_cast<size_t>(l.noncausal_width));
    swa_gather = DeviceBuffer<int32_t>(std::max<size_t>(static_cast<size_t>(l.max_reqs), 1));
    mla_r1 = DeviceBuffer<int64_t>(cap);
    mla_r2 = DeviceBuffer<int64_t>(cap);
    ring = DeviceBuffer<int64_t>(cap);
    r2_slots = DeviceBuffer<int64_t>(cap);
    r2_csl = DeviceBuffer<int32_t>(std::max<size_t>(static_cast<size_t>(l.max_reqs), 1));
    for (int k = 0; k < 2; ++k) {
      seq_out[k] = DeviceBuffer<int32_t>(cap);
      bt_out[k] = DeviceBuffer<int32_t>(cap * static_cast<size_t>(l.bt_out_stride));
      decode_lens[k] = DeviceBuffer<int32_t>(cap);
      indices[k] = DeviceBuffer<int32_t>(cap);
      per_req[k] = DeviceBuffer<int32_t>(cap);
      pf_cu[k] = DeviceBuffer<int32_t>(std::max<size_t>(static_cast<size_t>(l.prefill_cu_len), 1));
      pf_rows[k] = DeviceBuffer<int32_t>(std::max<size_t>(static_cast<size_t>(l.prefill_rows), 1));
      pf_ks[k] = DeviceBuffer<int32_t>(cap);
      pf_ke[k] = DeviceBuffer<int32_t>(cap);
    }
    seg_qsl = DeviceBuffer<int32_t>(static_cast<size_t>(l.max_segments) + 1);
    seg_seq_lens = DeviceBuffer<int32_t>(std::max<size_t>(static_cast<size_t>(l.max_segments), 1));
    seg_count = DeviceBuffer<int32_t>(2);  // count, prefill_segment_max_query_len
    view.token_to_req = token_to_req.get();
    view.swa_lens = swa_lens.get();
    view.swa_indices = swa_indices.get();
    view.swa_indices_noncausal = swa_nc.get();
    view.swa_gather_lens = swa_gather.get();
    view.mla_r1_slots = mla_r1.get();
    view.mla_r2_slots = mla_r2.get();
    view.ring_slots = ring.get();
    view.indexer_r2_slots = r2_slots.get();
    view.indexer_r2_csl = r2_csl.get();
    for (int k = 0; k < 2; ++k)
      view.indexer[k] = IndexerOutputs{seq_out[k].get(), bt_out[k].get(), decode_lens[k].get(), indices[k].get(),
                                       per_req[k].get(),  pf_cu[k].get(),  pf_rows[k].get(),     pf_ks[k].get(),
                                       pf_ke[k].get()};
    view.seg_qsl = seg_qsl.get();
    view.seg_seq_lens = seg_seq_lens.get();
    view.seg_count = seg_count.get();
  }

  uint64_t Bytes() const {
    uint64_t b = token_to_req.bytes() + swa_lens.bytes() + swa_indices.bytes() + swa_nc.bytes() + swa_gather.bytes() +
                 mla_r1.bytes() +
                 mla_r2.bytes() +
                 ring.bytes() + r2_slots.bytes() + r2_csl.bytes() + seg_qsl.bytes() + seg_seq_lens.bytes() +
                 seg_count.bytes();
    for (int k = 0; k < 2; ++k)
      b += seq_out[k].bytes() + bt_out[k].bytes() + decode_lens[k].bytes() + indices[k].bytes() + per_req[k].bytes() +
           pf_cu[k].bytes() + pf_rows[k].bytes() + pf_ks[k].bytes() + pf_ke[k].bytes();
    return b;
  }

  absl::Status Poison(cudaStream_t s) {
    for (DeviceBuffer<int32_t>* b :
         {&token_to_req, &swa_lens, &swa_indices, &swa_nc, &swa_gather, &r2_csl, &seg_qsl, &seg_seq_lens, &seg_count})
      CUDA_RETURN_IF_ERROR(FillI32(*b, s));
    for (int k = 0; k < 2; ++k)
      for (DeviceBuffer<int32_t>* b : {&seq_out[k], &bt_out[k], &decode_lens[k], &indices[k], &per_req[k], &pf_cu[k],
                                       &pf_rows[k], &pf_ks[k], &pf_ke[k]})
        CUDA_RETURN_IF_ERROR(FillI32(*b, s));
    for (DeviceBuffer<int64_t>* b : {&mla_r1, &mla_r2, &ring, &r2_slots})
      CUDA_RETURN_IF_ERROR(LaunchFunctor(FillI64Kernel{b->get(), kPoison, b->size()}, FillShape(b->size()), s));
    return absl::OkStatus();
  }

  static cudaError_t FillI32(DeviceBuffer<int32_t>& b, cudaStream_t s) {
    return LaunchFunctor(GpuBackend::FillKernel{b.get(), kPoison, b.size()}, FillShape(b.size()), s);
  }

  template <class T>
  static absl::Status Get(const DeviceBuffer<T>& b, std::vector<T>& host) {
    host.resize(b.size());
    if (!host.empty()) CUDA_RETURN_IF_ERROR(cudaMemcpy(host.data(), b.get(), b.bytes(), cudaMemcpyDeviceToHost));
    return absl::OkStatus();
  }

  absl::Status Download(const SuiteLayout& l, SuiteImage& im) const {
    DS_RETURN_IF_ERROR(Get(token_to_req, im.token_to_req));
    DS_RETURN_IF_ERROR(Get(swa_lens, im.swa_lens));
    DS_RETURN_IF_ERROR(Get(swa_indices, im.swa_indices));
    DS_RETURN_IF_ERROR(Get(swa_nc, im.swa_indices_noncausal));
    DS_RETURN_IF_ERROR(Get(swa_gather, im.swa_gather_lens));
    DS_RETURN_IF_ERROR(Get(mla_r1, im.mla_r1_slots));
    DS_RETURN_IF_ERROR(Get(mla_r2, im.mla_r2_slots));
    DS_RETURN_IF_ERROR(Get(ring, im.ring_slots));
    for (int k = 0; k < 2; ++k) {
      DS_RETURN_IF_ERROR(Get(seq_out[k], im.indexer[k].seq_out));
      DS_RETURN_IF_ERROR(Get(bt_out[k], im.indexer[k].bt_out));
      DS_RETURN_IF_ERROR(Get(decode_lens[k], im.indexer[k].decode_lens));
      DS_RETURN_IF_ERROR(Get(indices[k], im.indexer[k].indices));
      DS_RETURN_IF_ERROR(Get(per_req[k], im.indexer[k].per_req));
      DS_RETURN_IF_ERROR(Get(pf_cu[k], im.indexer[k].prefill_cu_seq_lens));
      DS_RETURN_IF_ERROR(Get(pf_rows[k], im.indexer[k].prefill_token_to_seq));
      DS_RETURN_IF_ERROR(Get(pf_ks[k], im.indexer[k].prefill_ks));
      DS_RETURN_IF_ERROR(Get(pf_ke[k], im.indexer[k].prefill_ke));
    }
    DS_RETURN_IF_ERROR(Get(r2_slots, im.indexer_r2_slots));
    DS_RETURN_IF_ERROR(Get(r2_csl, im.indexer_r2_csl));
    DS_RETURN_IF_ERROR(Get(seg_qsl, im.seg_qsl));
    DS_RETURN_IF_ERROR(Get(seg_seq_lens, im.seg_seq_lens));
    im.seg_seq_lens.resize(static_cast<size_t>(l.max_segments));  // the buffer holds at least one cell
    DS_RETURN_IF_ERROR(Get(seg_count, im.seg_count));
    return absl::OkStatus();
  }
};

// Every value a captured graph freezes: the sizes in kernel arguments, for the host-total
// implementations the host totals their op sizes come from, and a hash of the host view of the
// prefill rows, which (c) and (d) plan on the host (indexer prefill chunks, #57207 segments).
using GraphKey =
    std::tuple<int, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, bool, bool, int32_t, int32_t,
               uint64_t>;

// FNV-1a over the host qsl and seq_lens of the prefill rows [nd, R); 0 without prefills.
uint64_t HostPrefillHash(const BatchInputs& in) {
  const BatchSizes& z = in.sizes;
  if (z.num_decodes >= z.num_reqs || in.host.query_start_loc == nullptr) return 0;
  uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](int32_t v) {
    for (int b = 0; b < 4; ++b) {
      h ^= static_cast<uint64_t>((static_cast<uint32_t>(v) >> (8 * b)) & 0xffu);
      h *= 1099511628211ull;
    }
  };
  for (int32_t r = z.num_decodes; r <= z.num_reqs; ++r) mix(in.host.query_start_loc[r]);
  if (in.host.seq_lens != nullptr)
    for (int32_t r = z.num_decodes; r < z.num_reqs; ++r) mix(in.host.seq_lens[r]);
  return h;
}

struct GraphEntry {
  SuiteGraph graph;
  std::unique_ptr<PinnedBuffer<uint8_t>> staging;  // CaptureForTiming of chain / cached only
  OpCounters counters;
};

}  // namespace gpu_suite_internal

using gpu_suite_internal::GraphEntry;
using gpu_suite_internal::GraphKey;
using gpu_suite_internal::Outputs;

// ---------------------------------------------------------------- SuiteGraph

SuiteGraph::~SuiteGraph() {
  if (exec_ != nullptr) CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec_));
  if (graph_ != nullptr) CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph_));
}

absl::Status SuiteGraph::Adopt(cudaGraph_t captured) {
  if (exec_ != nullptr) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(exec_, captured, &info) == cudaSuccess) {
      if (graph_ != nullptr) CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph_));
      graph_ = captured;
      ++updates_;
      return absl::OkStatus();
    }
    (void)cudaGetLastError();  // the refused update's error is not sticky; clear it
    CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec_));
    exec_ = nullptr;
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, captured, 0);
  if (err != cudaSuccess) {
    CUDA_CHECK_NOTHROW(cudaGraphDestroy(captured));
    return CudaStatus(err, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  if (graph_ != nullptr) CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph_));
  graph_ = captured;
  exec_ = exec;
  ++instantiations_;
  return absl::OkStatus();
}

absl::Status SuiteGraph::Launch(cudaStream_t stream) const {
  if (exec_ == nullptr) return absl::FailedPreconditionError("SuiteGraph: nothing instantiated");
  CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, stream));
  return absl::OkStatus();
}

absl::StatusOr<SuiteGraph::NodeCounts> SuiteGraph::CountNodes() const {
  NodeCounts c;
  if (graph_ == nullptr) return c;
  size_t n = 0;
  CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph_, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph_, nodes.data(), &n));
  c.total = n;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDA_RETURN_IF_ERROR(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) ++c.kernels;
    else if (type == cudaGraphNodeTypeMemcpy) ++c.memcpys;
    else if (type == cudaGraphNodeTypeMemset) ++c.memsets;
    else ++c.other;
  }
  return c;
}

// ---------------------------------------------------------------- GpuSuite state

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

  int32_t* dev_qsl() const { return reinterpret_cast<int32_t*>(inputs.get() + qsl_off); }
  int32_t* dev_seq() const { return reinterpret_cast<int32_t*>(inputs.get() + seq_off); }
  int64_t* dev_slot() const { return reinterpret_cast<int64_t*>(inputs.get() + slot_off); }
  int32_t* dev_bt() const { return reinterpret_cast<int32_t*>(inputs.get() + bt_off); }

  GraphKey Key(Impl impl) const {
    const BatchSizes& z = view.sizes;
    const bool host_totals = (ReadsHostTotals(impl) || ReadsHostBoundaries(impl)) && view.host.query_start_loc;
    const int32_t total = host_totals ? view.host.query_start_loc[z.num_reqs] : -1;
    const int32_t decode_total = host_totals ? view.host.query_start_loc[z.num_decodes] : -1;
    return GraphKey{static_cast<int>(impl.index()), z.num_reqs, z.num_tokens, z.num_decodes, z.num_decode_tokens,
                    z.capacity, z.bt_width, z.bt_stride, view.fp8_prefill, view.causal, total, decode_total,
                    host_totals ? gpu_suite_internal::HostPrefillHash(view) : 0};
  }

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

absl::StatusOr<SuiteImage> GpuSuite::DownloadImage(Impl impl) {
  State& st = *d_;
  const auto& o = st.outputs[impl.index()];
  if (o == nullptr)
    return absl::FailedPreconditionError(absl::StrCat("GpuSuite: ", std::string(ImplName(impl)), " has not run"));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.stream.get()));
  SuiteImage im;
  DS_RETURN_IF_ERROR(o->Download(st.layout, im));
  return im;
}

absl::StatusOr<SuiteRunResult> GpuSuite::Download(Impl impl) {
  State& st = *d_;
  if (!st.staged) return absl::FailedPreconditionError("GpuSuite::Download: no step staged");
  DS_ASSIGN_OR_RETURN(SuiteImage image, DownloadImage(impl));
  // The device truth as it is now (in-place rewrites included).
  const BatchSizes& z = st.view.sizes;
  const size_t R = static_cast<size_t>(z.num_reqs), N = static_cast<size_t>(z.num_tokens);
  std::vector<int32_t> qsl(R + 1), seq(std::max<size_t>(R, 1)), bt(std::max<size_t>(R * z.bt_stride, 1));
  std::vector<int64_t> slot(std::max<size_t>(N, 1));
  CUDA_RETURN_IF_ERROR(cudaMemcpy(qsl.data(), st.dev_qsl(), 4 * (R + 1), cudaMemcpyDeviceToHost));
  if (R > 0) CUDA_RETURN_IF_ERROR(cudaMemcpy(seq.data(), st.dev_seq(), 4 * R, cudaMemcpyDeviceToHost));
  if (R * z.bt_stride > 0)
    CUDA_RETURN_IF_ERROR(cudaMemcpy(bt.data(), st.dev_bt(), 4 * R * z.bt_stride, cudaMemcpyDeviceToHost));
  if (N > 0) CUDA_RETURN_IF_ERROR(cudaMemcpy(slot.data(), st.dev_slot(), 8 * N, cudaMemcpyDeviceToHost));
  BatchInputs truth = st.view;
  truth.device = DeviceBatch{qsl.data(), seq.data(), bt.data(), slot.data()};
  SuiteRunResult result;
  result.counters = st.counters[impl.index()];
  result.mismatches = CompareSuite(impl, truth, st.layout, st.consts, image.View());
  return result;
}

absl::Status GpuSuite::OverwriteDeviceQsl(const std::vector<int32_t>& qsl) {
  State& st = *d_;
  if (!st.staged) return absl::FailedPreconditionError("GpuSuite::OverwriteDeviceQsl: no step staged");
  if (qsl.size() != static_cast<size_t>(st.view.sizes.num_reqs) + 1)
    return absl::InvalidArgumentError(absl::StrFormat("GpuSuite::OverwriteDeviceQsl: %d entries, expected R + 1 = %d",
                                                      qsl.size(), st.view.sizes.num_reqs + 1));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.stream.get()));
  std::memcpy(st.qsl_staging.get(), qsl.data(), 4 * qsl.size());
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(st.dev_qsl(), st.qsl_staging.get(), 4 * qsl.size(), cudaMemcpyHostToDevice,
                                       st.stream.get()));
  return absl::OkStatus();
}

int32_t* GpuSuite::device_query_start_loc() const { return d_->dev_qsl(); }

absl::Status GpuSuite::Synchronize() {
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d_->stream.get()));
  return absl::OkStatus();
}

cudaStream_t GpuSuite::stream() const { return d_->stream.get(); }
const SuiteLayout& GpuSuite::layout() const { return d_->layout; }
const BatchSizes& GpuSuite::staged_sizes() const { return d_->view.sizes; }
const OpCounters& GpuSuite::last_counters(Impl impl) const { return d_->counters[impl.index()]; }

uint64_t GpuSuite::device_bytes() const {
  const State& st = *d_;
  uint64_t bytes = st.inputs.bytes() + st.arange.bytes() + st.scratch.bytes();
  for (const auto& o : st.outputs)
    if (o != nullptr) bytes += o->Bytes();
  return bytes;
}

absl::Status CheckFreeDeviceMemory(const GpuMemoryPlan& plan, absl::string_view who, absl::string_view hint) {
  int device = 0;
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  const uint64_t host = pages > 0 && page_size > 0 ? SatMul(static_cast<uint64_t>(pages), static_cast<uint64_t>(page_size)) : 0;
  return CheckMemoryFits(plan, who, hint, device, free_bytes, total_bytes, host);
}

}  // namespace dspark
