// The device compare of the GPU executor's region check: one launch counts, for every task
// (an implementation's defined region, kernels/reference/region_compare.h), the cells that differ
// from the uploaded reference, the padding columns apart. CPU truth:
// ref::CountRegionMismatches; tests/kernels/test_gpu_compare_gpu.cu compares the two.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/reference/region_compare.h"

namespace dspark {

// tasks: device memory [num_tasks], their pointers device memory too. counts: device memory
// [2 * num_tasks], zeroed by the caller; the kernel adds task t's counts to counts[2t] and
// counts[2t + 1]. max_cells: the largest rows * cols among the tasks (sizes the grid).
absl::Status LaunchRegionCompare(const RegionCompareTask* tasks, int32_t num_tasks, int64_t max_cells,
                                 unsigned long long* counts, cudaStream_t stream);

}  // namespace dspark
