// Whether this process can run GPU work, and if not, why: the one source of the "no CUDA device"
// messages of every GPU entry point (`run --executor gpu`, `sweep --executor gpu`, `bench`,
// `microbench`, `calibrate`). Compiled in every build; without CUDA it always says so.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

// "" when cudaGetDeviceCount finds at least one device; otherwise one line starting "no CUDA
// device (" that gives the runtime's answer, e.g. "no CUDA device (cudaGetDeviceCount: no
// CUDA-capable device is detected, cudaErrorNoDevice)", or that this build has no CUDA.
// Clears the runtime's last error, so a failed probe does not surface in a later call.
std::string NoCudaDeviceReason();

// What `run --executor gpu` / `sweep --executor gpu` say after the reason.
inline constexpr char kGpuExecutorNeedsDevice[] =
    "the GPU executor runs every step's kernels on a GPU; use --executor cpu (CPU mode: emulated kernels, "
    "calibrated costs)";

// OK with a device; FailedPrecondition "<reason>: <consequence>" without one.
absl::Status RequireCudaDevice(absl::string_view consequence);

// RequireCudaDevice for `bench`, `microbench` and `calibrate`: "<reason>: <command> measures GPU
// time; use `dspark-sim run` for CPU mode with calibrated costs".
absl::Status RequireCudaDeviceToMeasure(absl::string_view command);

}  // namespace dspark::sim
