#include "sim/exec/cuda_device.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#if defined(DSPARK_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace dspark::sim {

std::string NoCudaDeviceReason() {
#if defined(DSPARK_HAVE_CUDA)
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (err != cudaSuccess)
    return absl::StrFormat("no CUDA device (cudaGetDeviceCount: %s, %s)", cudaGetErrorString(err),
                           cudaGetErrorName(err));
  if (count < 1) return "no CUDA device (cudaGetDeviceCount found 0 devices)";
  return "";
#else
  return "no CUDA device (this build has no CUDA: configured without nvcc or with -DDSPARK_ENABLE_CUDA=OFF)";
#endif
}

absl::Status RequireCudaDevice(absl::string_view consequence) {
  const std::string reason = NoCudaDeviceReason();
  if (reason.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(reason, ": ", consequence));
}

absl::Status RequireCudaDeviceToMeasure(absl::string_view command) {
  return RequireCudaDevice(
      absl::StrCat(command, " measures GPU time; use `dspark-sim run` for CPU mode with calibrated costs"));
}

}  // namespace dspark::sim
