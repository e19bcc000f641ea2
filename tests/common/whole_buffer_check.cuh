// The whole-buffer check, kept as the tests' oracle for the region check (kernels/suite/
// gpu_check.cuh) that the GPU executor and `bench` use: it downloads every output buffer of an
// implementation and the device truth of the staged step, and compares them on the host with
// CompareSuite, cell by cell over the whole capacity. Slow (about 42 MB per implementation at a
// 16k capacity), and written only from GpuSuite's public view.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/suite.h"

namespace dspark {

inline absl::StatusOr<SuiteRunResult> WholeBufferCheck(GpuSuite& suite, Impl impl) {
  DS_ASSIGN_OR_RETURN(SuiteImage image, suite.DownloadImage(impl));  // synchronizes the stream
  const BatchInputs& staged = suite.staged_view();
  // The device truth as it is now (in-place rewrites included).
  const BatchSizes& z = staged.sizes;
  const size_t R = static_cast<size_t>(z.num_reqs), N = static_cast<size_t>(z.num_tokens);
  const size_t bt_cells = R * static_cast<size_t>(z.bt_stride);
  std::vector<int32_t> qsl(R + 1), seq(std::max<size_t>(R, 1)), bt(std::max<size_t>(bt_cells, 1));
  std::vector<int64_t> slot(std::max<size_t>(N, 1));
  CUDA_RETURN_IF_ERROR(cudaMemcpy(qsl.data(), staged.device.query_start_loc, 4 * (R + 1), cudaMemcpyDeviceToHost));
  if (R > 0) CUDA_RETURN_IF_ERROR(cudaMemcpy(seq.data(), staged.device.seq_lens, 4 * R, cudaMemcpyDeviceToHost));
  if (bt_cells > 0)
    CUDA_RETURN_IF_ERROR(cudaMemcpy(bt.data(), staged.device.block_table, 4 * bt_cells, cudaMemcpyDeviceToHost));
  if (N > 0) CUDA_RETURN_IF_ERROR(cudaMemcpy(slot.data(), staged.device.slot_mapping, 8 * N, cudaMemcpyDeviceToHost));
  BatchInputs truth = staged;
  truth.device = DeviceBatch{qsl.data(), seq.data(), bt.data(), slot.data()};
  SuiteRunResult result;
  result.counters = suite.last_counters(impl);
  result.mismatches = CompareSuite(impl, truth, suite.layout(), suite.consts(), image.View());
  return result;
}

}  // namespace dspark
