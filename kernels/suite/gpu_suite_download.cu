// GpuSuite's whole-buffer download of an implementation's outputs (the tests' whole-buffer
// oracle, tests/common/whole_buffer_check.cuh, compares it), what the region check reads, the
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
