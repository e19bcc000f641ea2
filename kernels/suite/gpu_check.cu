#include "kernels/suite/gpu_check.cuh"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/byte_math.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"
#include "kernels/suite/gpu_check_plan.h"
#include "kernels/suite/gpu_compare.cuh"
#include "kernels/suite/regions.h"

namespace dspark {
namespace {

uint64_t Align16(uint64_t v) { return (v + kCheckPackAlign - 1) / kCheckPackAlign * kCheckPackAlign; }

uint64_t TasksBytes(int impls) {
  return Align16(static_cast<uint64_t>(std::max(impls, 1)) * kMaxSuiteRegions * sizeof(RegionCompareTask));
}
uint64_t CountsLen(int impls) { return 2 * static_cast<uint64_t>(std::max(impls, 1)) * kMaxSuiteRegions; }

bool SameStep(const BatchInputs& a, const BatchInputs& b) {
  const BatchSizes &x = a.sizes, &y = b.sizes;
  return x.num_reqs == y.num_reqs && x.num_tokens == y.num_tokens && x.num_decodes == y.num_decodes &&
         x.num_decode_tokens == y.num_decode_tokens && x.capacity == y.capacity && x.bt_width == y.bt_width &&
         x.bt_stride == y.bt_stride && a.fp8_prefill == b.fp8_prefill && a.causal == b.causal;
}

// Whether the device arrays of `a` and `b` (host-readable) hold the same step inputs.
bool SameDeviceArrays(const BatchInputs& a, const BatchInputs& b) {
  const BatchSizes& z = a.sizes;
  const size_t R = static_cast<size_t>(z.num_reqs), N = static_cast<size_t>(z.num_tokens);
  const size_t bt = R * static_cast<size_t>(z.bt_stride);
  return std::memcmp(a.device.query_start_loc, b.device.query_start_loc, 4 * (R + 1)) == 0 &&
         (R == 0 || std::memcmp(a.device.seq_lens, b.device.seq_lens, 4 * R) == 0) &&
         (N == 0 || std::memcmp(a.device.slot_mapping, b.device.slot_mapping, 8 * N) == 0) &&
         (bt == 0 || std::memcmp(a.device.block_table, b.device.block_table, 4 * bt) == 0);
}

}  // namespace

void GpuRegionCheck::AddToPlan(const SuiteLayout& layout, const GpuSuiteCapacity& capacity, int impls,
                               GpuMemoryPlan& plan) {
  const uint64_t block = SatAdd(TasksBytes(impls), MaxWantPackBytes(layout));
  plan.AddDevice("region check: tasks and reference", block);
  plan.AddDevice("region check: counts", 8 * CountsLen(impls));
  plan.AddPinned("region check: upload staging", block);
  plan.AddPinned("region check: counts", 8 * CountsLen(impls));
  plan.AddPinned("region check: step inputs", MakeGpuSuiteInputLayout(capacity).bytes);
  plan.AddPinned("region check: span mirror", MaxRegionCheckBytes(layout));
}

absl::StatusOr<std::unique_ptr<GpuRegionCheck>> GpuRegionCheck::Create(const SuiteLayout& layout,
                                                                        const GpuSuiteCapacity& capacity, int impls,
                                                                        bool on_device) {
  if (impls < 1) return absl::InvalidArgumentError("GpuRegionCheck: at least one implementation");
  std::unique_ptr<GpuRegionCheck> c(new GpuRegionCheck());
  c->layout_ = layout;
  c->impls_ = impls;
  c->on_device_ = on_device;
  c->inputs_ = MakeGpuSuiteInputLayout(capacity);
  c->tasks_bytes_ = TasksBytes(impls);
  try {
    const uint64_t block = SatAdd(c->tasks_bytes_, MaxWantPackBytes(layout));
    c->device_ = DeviceBuffer<uint8_t>(block);
    c->counts_ = DeviceBuffer<unsigned long long>(CountsLen(impls));
    c->upload_ = PinnedBuffer<uint8_t>(block);
    c->counts_host_ = PinnedBuffer<unsigned long long>(CountsLen(impls));
    c->truth_ = PinnedBuffer<uint8_t>(c->inputs_.bytes);
    c->mirror_ = PinnedBuffer<uint8_t>(MaxRegionCheckBytes(layout));
  } catch (const CudaError& e) {
    return absl::ResourceExhaustedError(absl::StrCat("GpuRegionCheck::Create: ", e.what()));
  }
  return c;
}

absl::Status GpuRegionCheck::StageCounts(Pending& p, const ModelConsts& consts) {
  const std::vector<SuiteRegion>& regions = p.regions;
  if (regions.size() > static_cast<size_t>(kMaxSuiteRegions))
    return absl::InternalError(absl::StrFormat("GpuRegionCheck: %d regions, at most %d", regions.size(),
                                               kMaxSuiteRegions));
  const size_t per_impl = regions.size();
  const size_t num_tasks = per_impl * p.outs.size();
  const WantPack pack = PlanWantPack(regions);
  if (tasks_bytes_ + pack.bytes > upload_.size())
    return absl::InternalError(absl::StrFormat("GpuRegionCheck: the reference pack (%d bytes) exceeds its bound %d",
                                               pack.bytes, upload_.size() - tasks_bytes_));
  uint8_t* up = upload_.get();
  WriteWantPack(regions, pack, up + tasks_bytes_);
  int64_t max_cells = 0;
  auto* tasks = reinterpret_cast<RegionCompareTask*>(up);
  for (size_t i = 0; i < p.outs.size(); ++i) {
    const std::vector<RegionCompareTask> t =
        PlanCompareTasks(regions, pack, device_.get() + tasks_bytes_, p.outs[i], p.impls[i].info().traits, consts);
    std::copy(t.begin(), t.end(), tasks + i * per_impl);
    for (const RegionCompareTask& k : t) max_cells = std::max(max_cells, k.rows * k.cols);
  }
  // One upload of the whole block when the pack is non-empty (the tasks lie before it).
  p.up_bytes = pack.bytes > 0 ? tasks_bytes_ + pack.bytes : num_tasks * sizeof(RegionCompareTask);
  p.num_tasks = num_tasks;
  p.max_cells = max_cells;
  p.counts_staged = true;
  return absl::OkStatus();
}

absl::Status GpuRegionCheck::EnqueueCounts(cudaStream_t s, Pending& p) {
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(device_.get(), upload_.get(), p.up_bytes, cudaMemcpyHostToDevice, s));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(counts_.get(), 0, 2 * p.num_tasks * sizeof(unsigned long long), s));
  DS_RETURN_IF_ERROR(LaunchRegionCompare(reinterpret_cast<const RegionCompareTask*>(device_.get()),
                                         static_cast<int32_t>(p.num_tasks), p.max_cells, counts_.get(), s));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(counts_host_.get(), counts_.get(),
                                       2 * p.num_tasks * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
  p.num_counts = 2 * p.num_tasks;
  stats_.bytes_up += p.up_bytes;
  stats_.bytes_down += 2 * p.num_tasks * sizeof(unsigned long long);
  ++stats_.device_compares;
  return absl::OkStatus();
}

absl::Status GpuRegionCheck::Prepare(GpuSuite& suite, const std::vector<Impl>& impls, const SuiteReference* hint_want,
                                     const BatchInputs* hint_in) {
  const auto t0 = std::chrono::steady_clock::now();
  if (p_.suite != nullptr)
    return absl::FailedPreconditionError("GpuRegionCheck::Prepare: the previous check is unfinished");
  if (static_cast<int>(impls.size()) > impls_)
    return absl::InvalidArgumentError(
        absl::StrFormat("GpuRegionCheck: %d implementations, created for %d", impls.size(), impls_));
  if (!(suite.layout() == layout_)) return absl::InvalidArgumentError("GpuRegionCheck: the suite's layout differs");
  Pending p;
  p.impls = impls;
  for (Impl impl : impls) {
    DS_ASSIGN_OR_RETURN(SuiteOutputs o, suite.device_outputs(impl));
    p.outs.push_back(o);
  }
  // Step 1's destination: the staged step with its device arrays in truth_ (Enqueue fills them).
  const BatchInputs& staged = suite.staged_view();
  uint8_t* t = truth_.get();
  p.truth = staged;
  p.truth.device = DeviceBatch{reinterpret_cast<int32_t*>(t + inputs_.qsl_off),
                               reinterpret_cast<int32_t*>(t + inputs_.seq_off),
                               reinterpret_cast<int32_t*>(t + inputs_.bt_off),
                               reinterpret_cast<int64_t*>(t + inputs_.slot_off)};
  // 2-3, host part. With a hint the regions and the compare's upload are staged now; the hint is
  // kept at Finish only if the truth equals its inputs. The regions read the step's inputs (the
  // padding rows start at qsl[num_decodes]): the hint's, equal to the truth's when it is kept.
  if (hint_want != nullptr && hint_in != nullptr && SameStep(*hint_in, staged)) {
    p.hint_want = hint_want;
    p.hint_in = hint_in;
    p.regions = SuiteRegions(*hint_want, *hint_in, layout_, suite.consts());
    if (on_device_) DS_RETURN_IF_ERROR(StageCounts(p, suite.consts()));
  }
  p.suite = &suite;
  p.host_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  p_ = std::move(p);
  return absl::OkStatus();
}

absl::Status GpuRegionCheck::Enqueue() {
  if (p_.suite == nullptr || p_.enqueued)
    return absl::FailedPreconditionError("GpuRegionCheck::Enqueue: needs a Prepare, once");
  const auto t0 = std::chrono::steady_clock::now();
  const absl::Status enqueued = [&]() -> absl::Status {
    // 1. The device truth of the inputs, behind everything the implementations issued.
    const BatchInputs& staged = p_.suite->staged_view();
    cudaStream_t s = p_.suite->stream();
    const BatchSizes& z = staged.sizes;
    const size_t R = static_cast<size_t>(z.num_reqs), N = static_cast<size_t>(z.num_tokens);
    const size_t bt_cells = R * static_cast<size_t>(z.bt_stride);
    uint8_t* t = truth_.get();  // where p_.truth.device points
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(t + inputs_.qsl_off, staged.device.query_start_loc, 4 * (R + 1),
                                         cudaMemcpyDeviceToHost, s));
    if (R > 0)
      CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(t + inputs_.seq_off, staged.device.seq_lens, 4 * R, cudaMemcpyDeviceToHost, s));
    if (N > 0)
      CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(t + inputs_.slot_off, staged.device.slot_mapping, 8 * N, cudaMemcpyDeviceToHost, s));
    if (bt_cells > 0)
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(t + inputs_.bt_off, staged.device.block_table, 4 * bt_cells,
                                           cudaMemcpyDeviceToHost, s));
    stats_.bytes_down += 4 * (R + 1) + 4 * R + 8 * N + 4 * bt_cells;
    // 3. With a hint, the device compare behind the truth's download: Finish's one
    // synchronization covers both.
    if (p_.counts_staged) DS_RETURN_IF_ERROR(EnqueueCounts(s, p_));
    return absl::OkStatus();
  }();
  if (!enqueued.ok()) {
    p_ = Pending{};
    return enqueued;
  }
  p_.enqueued = true;
  p_.host_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  return absl::OkStatus();
}

absl::Status GpuRegionCheck::Begin(GpuSuite& suite, const std::vector<Impl>& impls, const SuiteReference* hint_want,
                                   const BatchInputs* hint_in) {
  DS_RETURN_IF_ERROR(Prepare(suite, impls, hint_want, hint_in));
  return Enqueue();
}

absl::StatusOr<std::vector<SuiteRunResult>> GpuRegionCheck::Finish() {
  if (p_.suite == nullptr || !p_.enqueued)
    return absl::FailedPreconditionError("GpuRegionCheck::Finish: needs a Prepare and an Enqueue (or a Begin)");
  const auto t0 = std::chrono::steady_clock::now();
  Pending p = std::move(p_);
  p_ = Pending{};
  GpuSuite& suite = *p.suite;
  const ModelConsts& consts = suite.consts();
  cudaStream_t s = suite.stream();
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  std::vector<int64_t> counts(counts_host_.get(), counts_host_.get() + p.num_counts);
  SuiteReference computed;
  const SuiteReference* want = p.hint_want;
  if (want != nullptr && !SameDeviceArrays(p.truth, *p.hint_in)) want = nullptr;
  if (want == nullptr) {
    computed = ComputeSuiteReference(p.truth, layout_, consts);
    want = &computed;
    ++stats_.references_computed;
    p.regions = SuiteRegions(*want, p.truth, layout_, consts);
    if (on_device_) {
      DS_RETURN_IF_ERROR(StageCounts(p, consts));
      DS_RETURN_IF_ERROR(EnqueueCounts(s, p));
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
      counts.assign(counts_host_.get(), counts_host_.get() + p.num_counts);
    }
  }
  // 4. CompareSuite on the spans of every implementation the device found differing.
  const std::vector<SuiteRegion>& regions = p.regions;
  std::vector<SuiteRunResult> results(p.impls.size());
  const size_t per_impl = regions.size();
  for (size_t i = 0; i < p.impls.size(); ++i) {
    results[i].counters = suite.last_counters(p.impls[i]);
    const int64_t* c = on_device_ ? counts.data() + 2 * per_impl * i : nullptr;
    if (c != nullptr && std::all_of(c, c + 2 * per_impl, [](int64_t v) { return v == 0; })) continue;
    // Only the differing regions come down; the others are the reference's cells (counted equal).
    const MirrorPlan mirror =
        PlanMirror(regions, p.outs[i], mirror_.get(), p.impls[i].info().traits, suite.consts(), c);
    for (const MirrorCopy& m : mirror.copies) {
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(m.dst, m.src, m.bytes, cudaMemcpyDeviceToHost, s));
      stats_.bytes_down += m.bytes;
    }
    WriteMirrorFills(regions, mirror);
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    ++stats_.mirrored;
    results[i].mismatches = CompareSuite(p.impls[i], p.truth, *want, layout_, consts, mirror.view);
    if (c != nullptr && CountsByField(regions, c) != CountsByField(results[i].mismatches))
      return absl::InternalError(absl::StrCat("GpuRegionCheck: the device compare's counts differ from "
                                              "CompareSuite's on the downloaded spans for ",
                                              std::string(ImplName(p.impls[i])), ": CompareSuite found\n",
                                              DescribeMismatches(results[i].mismatches)));
  }
  ++stats_.steps;
  stats_.host_us +=
      p.host_us + std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  return results;
}

absl::StatusOr<std::vector<SuiteRunResult>> GpuRegionCheck::Check(GpuSuite& suite, const std::vector<Impl>& impls,
                                                                  const SuiteReference* hint_want,
                                                                  const BatchInputs* hint_in) {
  DS_RETURN_IF_ERROR(Begin(suite, impls, hint_want, hint_in));
  return Finish();
}

}  // namespace dspark
