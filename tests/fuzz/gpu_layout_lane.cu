#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/common/backend_gpu.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"
#include "kernels/suite/impl_registry.h"
#include "kernels/suite/suite_impls.h"
#include "tests/fuzz/gpu_layout_lane.cuh"
#include "tests/common/whole_buffer_check.cuh"

namespace dspark::fuzz {

// A field added to SuiteOutputs must get its place in OutputPack (and its download), or the lane
// would hand the implementations a null buffer.
static_assert(sizeof(IndexerOutputs) == 9 * sizeof(void*), "IndexerOutputs changed: update OutputPack");
// The three C128A fields (DeepSeek-V4's) stay null: the lane draws DeepSeek-V4.1 layouts only.
static_assert(sizeof(SuiteOutputs) == 34 * sizeof(void*), "SuiteOutputs changed: update OutputPack");

namespace {

constexpr int kPoisonByte = 0xA5;  // every unwritten int32 / int64 cell differs from any reference value

size_t Align(size_t x) { return (x + 255) / 256 * 256; }

}  // namespace

OutputPack MakeOutputPack(const SuiteLayout& l) {
  const size_t cap = static_cast<size_t>(l.token_capacity);
  const size_t seg = static_cast<size_t>(std::max(l.max_segments, 0));
  OutputPack p;
  size_t at = 0;
  const auto take = [&at](size_t bytes) {
    const size_t here = at;
    at = Align(at + bytes);
    return here;
  };
  p.token_to_req = take(4 * cap);
  p.swa_lens = take(4 * cap);
  p.mla_r1 = take(8 * cap);
  p.mla_r2 = take(8 * cap);
  p.ring = take(8 * cap);
  for (int k = 0; k < 2; ++k) {
    p.seq_out[k] = take(4 * cap);
    p.decode_lens[k] = take(4 * cap);
    p.indices[k] = take(4 * cap);
    p.per_req[k] = take(4 * cap);
  }
  p.seg_qsl = take(4 * (seg + 1));
  p.seg_seq_lens = take(4 * std::max<size_t>(seg, 1));
  p.seg_count = take(8);  // the count, then #57207's max query length
  p.r2_slots = take(8 * cap);
  p.r2_csl = take(4 * static_cast<size_t>(std::max(l.max_reqs, 1)));
  p.swa_gather = take(4 * static_cast<size_t>(std::max(l.max_reqs, 1)));
  for (int k = 0; k < 2; ++k) {
    p.pf_cu[k] = take(4 * static_cast<size_t>(std::max(l.prefill_cu_len, 1)));
    p.pf_rows[k] = take(4 * static_cast<size_t>(std::max(l.prefill_rows, 1)));
    p.pf_ks[k] = take(4 * cap);
    p.pf_ke[k] = take(4 * cap);
  }
  p.one_d_end = at;
  p.swa_indices = take(4 * cap * static_cast<size_t>(l.window));
  p.swa_noncausal = take(4 * cap * static_cast<size_t>(l.noncausal_width));
  for (int k = 0; k < 2; ++k) p.bt_out[k] = take(4 * cap * static_cast<size_t>(l.bt_out_stride));
  p.bytes = at;
  return p;
}

SuiteOutputs OutputsAt(uint8_t* base, const OutputPack& p) {
  const auto i32 = [base](size_t off) { return reinterpret_cast<int32_t*>(base + off); };
  const auto i64 = [base](size_t off) { return reinterpret_cast<int64_t*>(base + off); };
  SuiteOutputs o;
  o.token_to_req = i32(p.token_to_req);
  o.swa_lens = i32(p.swa_lens);
  o.swa_indices = i32(p.swa_indices);
  o.mla_r1_slots = i64(p.mla_r1);
  o.mla_r2_slots = i64(p.mla_r2);
  o.ring_slots = i64(p.ring);
  for (int k = 0; k < 2; ++k)
    o.indexer[k] = IndexerOutputs{i32(p.seq_out[k]), i32(p.bt_out[k]), i32(p.decode_lens[k]), i32(p.indices[k]),
                                  i32(p.per_req[k]),  i32(p.pf_cu[k]),  i32(p.pf_rows[k]),     i32(p.pf_ks[k]),
                                  i32(p.pf_ke[k])};
  o.seg_qsl = i32(p.seg_qsl);
  o.seg_seq_lens = i32(p.seg_seq_lens);
  o.seg_count = i32(p.seg_count);
  o.swa_indices_noncausal = i32(p.swa_noncausal);
  o.indexer_r2_slots = i64(p.r2_slots);
  o.indexer_r2_csl = i32(p.r2_csl);
  o.swa_gather_lens = i32(p.swa_gather);
  return o;
}

GpuLayoutLane::~GpuLayoutLane() = default;

absl::StatusOr<std::unique_ptr<GpuLayoutLane>> GpuLayoutLane::Create(const GpuSuiteCapacity& capacity,
                                                                     const ModelConsts& consts) {
  DS_RETURN_IF_ERROR(ValidateGpuSuiteCapacity(capacity, consts));
  std::unique_ptr<GpuLayoutLane> lane(new GpuLayoutLane());
  lane->capacity_ = capacity;
  lane->consts_ = consts;
  lane->layout_ = MakeSuiteLayout(capacity.max_tokens, capacity.max_reqs, capacity.max_bt_stride, consts);
  lane->in_layout_ = MakeGpuSuiteInputLayout(capacity);
  lane->pack_ = MakeOutputPack(lane->layout_);
  try {
    lane->inputs_ = std::make_unique<DeviceBuffer<uint8_t>>(lane->in_layout_.bytes);
    lane->inputs_pinned_ = std::make_unique<PinnedBuffer<uint8_t>>(lane->in_layout_.bytes);
    std::vector<int32_t> iota(static_cast<size_t>(lane->layout_.arange_len));
    std::iota(iota.begin(), iota.end(), 0);
    lane->arange_ = std::make_unique<DeviceBuffer<int32_t>>(iota);
    lane->scratch_ = std::make_unique<DeviceBuffer<uint8_t>>(MaxWorkspaceBytes(lane->layout_));
    for (size_t i = 0; i < NumImpls(); ++i) {
      lane->outputs_.push_back(std::make_unique<DeviceBuffer<uint8_t>>(lane->pack_.bytes));
      lane->mirrors_.push_back(std::make_unique<PinnedBuffer<uint8_t>>(lane->pack_.bytes));
      lane->staging_.push_back(std::make_unique<PinnedBuffer<uint8_t>>(SuiteStagingBytes(lane->layout_)));
      CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(lane->outputs_.back()->get(), kPoisonByte, lane->pack_.bytes, lane->stream_.get()));
    }
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(lane->stream_.get()));
  } catch (const CudaError& e) {
    return absl::ResourceExhaustedError(absl::StrCat("GpuLayoutLane::Create: ", e.what()));
  }
  return lane;
}

bool GpuLayoutLane::Fits(const BatchSizes& z) const {
  return CheckFits(layout_, z, consts_).ok() && z.bt_stride <= capacity_.max_bt_stride;
}

absl::StatusOr<std::string> GpuLayoutLane::RunAndCheck(const CaseBatch& b, size_t step, LayoutRunStats& stats) {
  const BatchSizes& z = b.sizes;
  const cudaStream_t stream = stream_.get();
  const size_t R = static_cast<size_t>(z.num_reqs), N = static_cast<size_t>(z.num_tokens);
  const size_t bt_cells = R * static_cast<size_t>(z.bt_stride);
  uint8_t* pinned = inputs_pinned_->get();
  std::memcpy(pinned + in_layout_.qsl_off, b.qsl.data(), 4 * (R + 1));
  if (R > 0) std::memcpy(pinned + in_layout_.seq_off, b.seq_lens.data(), 4 * R);
  if (N > 0) std::memcpy(pinned + in_layout_.slot_off, b.slot_mapping.data(), 8 * N);
  if (bt_cells > 0) std::memcpy(pinned + in_layout_.bt_off, b.block_table.data(), 4 * bt_cells);
  const size_t in_bytes = bt_cells > 0 ? in_layout_.bt_off + 4 * bt_cells : in_layout_.slot_off + 8 * N;
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(inputs_->get(), pinned, in_bytes, cudaMemcpyHostToDevice, stream));

  uint8_t* dev = inputs_->get();
  BatchInputs in;
  in.sizes = z;
  in.fp8_prefill = b.fp8_prefill;
  in.causal = b.causal;
  in.device = DeviceBatch{reinterpret_cast<const int32_t*>(dev + in_layout_.qsl_off),
                          reinterpret_cast<const int32_t*>(dev + in_layout_.seq_off),
                          reinterpret_cast<const int32_t*>(dev + in_layout_.bt_off),
                          reinterpret_cast<const int64_t*>(dev + in_layout_.slot_off)};
  in.host = HostBatch{b.host_qsl.data(), b.host_seq_lens.data()};

  const std::vector<Impl>& impls = ImplsOfModel(ModelKind::kV41);
  for (Impl impl : impls) {
    const size_t i = impl.index();
    SuiteStep s;
    s.in = &in;
    s.layout = layout_;
    s.consts = consts_;
    s.out = OutputsAt(outputs_[i]->get(), pack_);
    s.arange = arange_->get();
    absl::Status run = ValidateSuiteStep(impl, s);
    if (run.ok() && impl.info().gpu == nullptr) run = absl::FailedPreconditionError("no GPU entry");
    if (run.ok()) {
      GpuBackend be(stream, scratch_->get(), scratch_->size(), staging_[i]->get(), staging_[i]->size());
      run = impl.info().gpu(be, s);
      if (run.ok()) run = be.status();
      stats.launches += be.counters().Launches();
      stats.host_syncs += be.counters().host_syncs;
    }
    if (!run.ok()) {
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
      return ViolationReport(impl, step, b, {"failed on a valid layout: " + run.ToString()}, {});
    }
  }
  // What CompareSuite reads: the 1-D fields whole, SWA rows [0, N), the non-causal SWA rows and
  // bt_out rows [0, N_d).
  const size_t swa_bytes = 4 * N * static_cast<size_t>(layout_.window);
  const size_t nc_bytes =
      b.causal ? 0 : 4 * static_cast<size_t>(z.num_decode_tokens) * static_cast<size_t>(layout_.noncausal_width);
  const size_t bt_bytes = 4 * static_cast<size_t>(z.num_decode_tokens) * static_cast<size_t>(layout_.bt_out_stride);
  for (Impl impl : impls) {
    uint8_t* host = mirrors_[impl.index()]->get();
    const uint8_t* src = outputs_[impl.index()]->get();
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host, src, pack_.one_d_end, cudaMemcpyDeviceToHost, stream));
    if (swa_bytes > 0)
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host + pack_.swa_indices, src + pack_.swa_indices, swa_bytes,
                                           cudaMemcpyDeviceToHost, stream));
    if (nc_bytes > 0)
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host + pack_.swa_noncausal, src + pack_.swa_noncausal, nc_bytes,
                                           cudaMemcpyDeviceToHost, stream));
    for (int k = 0; k < 2 && bt_bytes > 0; ++k)
      CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(host + pack_.bt_out[k], src + pack_.bt_out[k], bt_bytes, cudaMemcpyDeviceToHost, stream));
  }
  const BatchInputs truth = b.Inputs();
  const SuiteReference want = ComputeSuiteReference(truth, layout_, consts_);  // while the device works
  CountStep(b, consts_, stats);
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  for (Impl impl : impls) {
    ++stats.runs;
    const std::vector<FieldMismatch> ms =
        CompareSuite(impl, truth, want, layout_, consts_, OutputsAt(mirrors_[impl.index()]->get(), pack_));
    for (const FieldMismatch& m : ms) stats.cells[static_cast<int>(m.kind)] += m.count;
    const std::vector<std::string> violations = ClassificationViolations(impl, b, ms);
    if (!violations.empty()) return ViolationReport(impl, step, b, violations, ms);
  }
  return std::string();
}

absl::StatusOr<std::string> GpuLayoutLane::CheckThroughGpuSuite(const CaseBatch& b, size_t step) {
  if (suite_ == nullptr) {
    DS_ASSIGN_OR_RETURN(suite_, GpuSuite::Create(capacity_, consts_, static_cast<int>(NumImpls())));
  }
  DS_RETURN_IF_ERROR(suite_->Stage(b.Inputs()));
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    const absl::Status run = suite_->Run(impl);
    if (!run.ok()) return ViolationReport(impl, step, b, {"GpuSuite::Run failed: " + run.ToString()}, {});
    DS_ASSIGN_OR_RETURN(const SuiteRunResult r, WholeBufferCheck(*suite_, impl));
    std::vector<std::string> violations = ClassificationViolations(impl, b, r.mismatches);
    for (std::string& v : violations) v = "through GpuSuite: " + v;
    if (!violations.empty()) return ViolationReport(impl, step, b, violations, r.mismatches);
  }
  return std::string();
}

}  // namespace dspark::fuzz
