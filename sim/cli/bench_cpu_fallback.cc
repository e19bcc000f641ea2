// `bench`, `microbench` and `calibrate` in a build without CUDA: they measure GPU time, so they
// say so and point to CPU mode instead of being missing from the command list. (With CUDA they
// are sim/cli/cmd_bench.cu, sim/cli/cmd_microbench.cu and sim/cli/cmd_calibrate.cu.)
#if !defined(DSPARK_HAVE_CUDA)

#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/suite/impl_registry.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/exec/cuda_device.h"
#include "sim/options/option_errors.h"

namespace dspark::sim {
namespace {

int NeedsGpu(const char* command, int argc, char** argv) {
  // An --impl list is still checked against the registry, so a typo is told apart from the
  // missing GPU.
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--impl")) {
      const auto impls = ParseImplList(argv[i + 1]);
      if (!impls.ok()) return cli::CommandError(command, "--impl: ", impls.status(), 2);
    }
  // A word that is neither an option nor the value right after an option's name is refused as
  // every command refuses it, before the missing GPU is reported.
  for (int i = 1; i < argc; ++i) {
    const bool after_option_name = i > 1 && argv[i - 1][0] == '-' && std::strchr(argv[i - 1], '=') == nullptr;
    if (argv[i][0] != '-' && !after_option_name)
      return cli::CommandError(command, UnexpectedArgument(argv[i], command), 2);
  }
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf(
          "dspark-sim %s measures GPU time and needs a CUDA build and a CUDA device.\n"
          "This build has no CUDA (configured without nvcc or with -DDSPARK_ENABLE_CUDA=OFF).\n"
          "CPU mode: `dspark-sim run` emulates the same kernel bodies on the CPU and takes metadata costs from the\n"
          "calibration file (workloads/, --calibration FILE) or the built-in defaults.\n",
          command);
      return 0;
    }
  return cli::CommandError(command, RequireCudaDeviceToMeasure(command), 2);
}

const cli::RegisterCommand kBench("bench", "GPU only: the seed's metadata and TPOT tables (this build has no CUDA)",
                                  [](int argc, char** argv) { return NeedsGpu("bench", argc, argv); });
const cli::RegisterCommand kMicrobench(
    "microbench", "GPU only: GPU time per call of the mapping and indexer implementations (this build has no CUDA)",
    [](int argc, char** argv) { return NeedsGpu("microbench", argc, argv); });
const cli::RegisterCommand kCalibrate("calibrate",
                                      "GPU only: write a metadata-cost calibration file (this build has no CUDA)",
                                      [](int argc, char** argv) { return NeedsGpu("calibrate", argc, argv); });

}  // namespace
}  // namespace dspark::sim

#endif  // !DSPARK_HAVE_CUDA
