// `sweep --executor gpu` (CUDA builds only: this file is compiled with the CUDA sources): the
// point's run with every step also through the GPU executor (its implementations are the
// point's checked ones); the CPU emulated check is skipped, since the executor compares the same
// outputs exactly on the device's. The sweep row reads the executor's check tally
// (RunResult::check()), the same counts as the CPU check's.
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"

namespace dspark::sim {
namespace {

const RegisterPointRunner kRegisterGpuPointRunner("gpu", [](const RunConfig& config) -> absl::StatusOr<RunResult> {
  RunConfig gpu = config;
  gpu.executor = "gpu";
  gpu.check = false;
  return ExecuteRun(gpu);
});

}  // namespace
}  // namespace dspark::sim
