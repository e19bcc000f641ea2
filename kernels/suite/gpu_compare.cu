#include "kernels/suite/gpu_compare.cuh"

#include <algorithm>

#include "kernels/common/cuda_check.h"

namespace dspark {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kCellsPerThread = 4;  // before the grid is capped
constexpr int64_t kMaxBlocksPerTask = 128;

__device__ int64_t Cell(const void* base, int32_t elem_bytes, int64_t i) {
  return elem_bytes == 8 ? static_cast<const int64_t*>(base)[i] : static_cast<const int32_t*>(base)[i];
}

__device__ unsigned long long BlockSum(unsigned long long v, unsigned long long* shared) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = 0;
  if (warp == 0) {
    v = lane < kThreads / 32 ? shared[lane] : 0;
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  __syncthreads();
  return v;  // thread 0's is the block's
}

// blockIdx.y: the task; blocks along x stride over its cells.
__global__ void RegionCompareKernel(const RegionCompareTask* tasks, unsigned long long* counts) {
  __shared__ unsigned long long shared[kThreads / 32];
  const RegionCompareTask t = tasks[blockIdx.y];
  const int64_t cells = t.rows * t.cols;
  unsigned long long diff = 0, pad = 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < cells; i += step) {
    const int64_t row = i / t.cols, col = i - row * t.cols;
    const int64_t want = i < t.dense_cells ? Cell(t.want, t.elem_bytes, i) : t.tail;
    const int64_t got = Cell(t.got, t.elem_bytes, row * t.got_stride + col);
    if (want != got) {
      if (t.padding_rows_from >= 0 && row >= t.padding_rows_from && col > 0) ++pad;
      else ++diff;
    }
  }
  diff = BlockSum(diff, shared);
  pad = BlockSum(pad, shared);
  if (threadIdx.x == 0) {
    if (diff != 0) atomicAdd(&counts[2 * blockIdx.y], diff);
    if (pad != 0) atomicAdd(&counts[2 * blockIdx.y + 1], pad);
  }
}

}  // namespace

absl::Status LaunchRegionCompare(const RegionCompareTask* tasks, int32_t num_tasks, int64_t max_cells,
                                 unsigned long long* counts, cudaStream_t stream) {
  if (num_tasks <= 0) return absl::OkStatus();
  if (num_tasks > 65535)
    return absl::InvalidArgumentError("LaunchRegionCompare: more than 65535 tasks (the grid's y extent)");
  const int64_t per_block = kThreads * kCellsPerThread;
  const int64_t blocks = std::clamp<int64_t>((std::max<int64_t>(max_cells, 0) + per_block - 1) / per_block, 1,
                                             kMaxBlocksPerTask);
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(num_tasks));
  RegionCompareKernel<<<grid, kThreads, 0, stream>>>(tasks, counts);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

}  // namespace dspark
