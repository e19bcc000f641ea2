// `bench` and `calibrate` in a build without CUDA: both measure GPU time, so they say so and
// point to CPU mode instead of being missing from the command list. (With CUDA they are
// sim/cmd_bench.cu and sim/cmd_calibrate.cu.)
#if !defined(DSPARK_HAVE_CUDA)

#include <cstdio>
#include <cstring>
#include <string>

#include "sim/cli_registry.h"

namespace dspark::sim {
namespace {

int NeedsGpu(const char* command, int argc, char** argv) {
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
  std::fprintf(stderr,
               "dspark-sim %s: no CUDA device: %s measures GPU time; use `dspark-sim run` for CPU mode with "
               "calibrated costs (this build has no CUDA: configured without nvcc or with -DDSPARK_ENABLE_CUDA=OFF)\n",
               command, command);
  return 2;
}

const cli::RegisterCommand kBench("bench", "GPU only: the seed's metadata and TPOT tables (this build has no CUDA)",
                                  [](int argc, char** argv) { return NeedsGpu("bench", argc, argv); });
const cli::RegisterCommand kCalibrate("calibrate",
                                      "GPU only: write a metadata-cost calibration file (this build has no CUDA)",
                                      [](int argc, char** argv) { return NeedsGpu("calibrate", argc, argv); });

}  // namespace
}  // namespace dspark::sim

#endif  // !DSPARK_HAVE_CUDA
