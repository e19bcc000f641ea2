// GpuSuite's whole-buffer download and compare (the old check path, kept for `bench` and the
// tests that compare it with the GPU executor's region check), what the region check reads, the
// device-qsl rewrite of the stale-boundary tests, and the free-memory pre-flight.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/common/byte_math.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/gpu_suite_state.cuh"

namespace dspark {

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

const BatchInputs& GpuSuite::staged_view() const { return d_->view; }
const ModelConsts& GpuSuite::consts() const { return d_->consts; }

absl::StatusOr<SuiteOutputs> GpuSuite::device_outputs(Impl impl) const {
  const auto& o = d_->outputs[impl.index()];
  if (o == nullptr)
    return absl::FailedPreconditionError(absl::StrCat("GpuSuite: ", std::string(ImplName(impl)), " has not run"));
  return o->view;
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
