// `sweep --executor gpu` (CUDA builds only: this file is compiled with the CUDA sources): the
// point's run with every step also through the GPU executor (its implementations are the
// point's checked ones); the CPU emulated check is skipped, since the executor compares the same
// outputs exactly on the device's. Its counts are mirrored into the `metadata_check` key the
// sweep reads.
#include "kernels/common/status_macros.h"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"

namespace dspark::sim {
namespace {

const RegisterPointRunner kRegisterGpuPointRunner("gpu", [](const RunConfig& config) -> absl::StatusOr<RunResult> {
  RunConfig gpu = config;
  gpu.executor = "gpu";
  gpu.check = false;
  DS_ASSIGN_OR_RETURN(RunResult result, ExecuteRun(gpu));
  if (result.summary.contains("gpu_executor") && !result.summary.contains("metadata_check"))
    result.summary["metadata_check"] = result.summary["gpu_executor"];
  return result;
});

}  // namespace
}  // namespace dspark::sim
