// One kernel body, two executors.
//
// A kernel is a plain struct ("functor") holding its params by value, with
//
//   struct Shared { ... };                  // block-shared scratch (may be empty)
//   static constexpr int kPhases = P;       // phases separated by a block barrier
//   DS_HD void Phase(int phase, const ThreadCtx& ctx, Shared& smem) const;
//
// On the GPU, RunFunctor<<<grid, block>>> runs every phase in order with __syncthreads()
// between phases. On the CPU, EmulateGrid runs phase p for every thread of a block before
// any thread starts phase p + 1, which is exactly the guarantee a block barrier gives. Bodies
// therefore may use shared memory and barriers, but no warp intrinsics and no inter-block
// communication (neither is expressible in the emulator).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/common/hd.h"

namespace dspark {

struct ThreadCtx {
  int32_t block;       // blockIdx.x
  int32_t thread;      // threadIdx.x
  int32_t block_dim;   // blockDim.x
  int32_t grid_dim;    // gridDim.x
};

struct LaunchShape {
  int32_t grid = 1;    // [blocks]
  int32_t block = 1;   // [threads per block]
};

// Runs `k` on the CPU over the whole grid. Deterministic: blocks in order, threads in order.
template <typename K>
void EmulateGrid(const K& k, LaunchShape shape) {
  using Shared = typename K::Shared;
  Shared smem;
  for (int32_t b = 0; b < shape.grid; ++b) {
    // Shared memory starts undefined on a GPU; poison it so that a body reading a cell no
    // thread wrote fails the exact comparisons instead of passing by luck.
    std::memset(static_cast<void*>(&smem), 0xA5, sizeof(Shared));
    for (int p = 0; p < K::kPhases; ++p) {
      for (int32_t t = 0; t < shape.block; ++t) {
        k.Phase(p, ThreadCtx{b, t, shape.block, shape.grid}, smem);
      }
    }
  }
}

#if defined(__CUDACC__)
template <typename K>
__global__ void RunFunctor(const K k) {
  __shared__ typename K::Shared smem;
  const ThreadCtx ctx{static_cast<int32_t>(blockIdx.x), static_cast<int32_t>(threadIdx.x),
                      static_cast<int32_t>(blockDim.x), static_cast<int32_t>(gridDim.x)};
#pragma unroll
  for (int p = 0; p < K::kPhases; ++p) {
    if (p > 0) __syncthreads();
    k.Phase(p, ctx, smem);
  }
}

// Thin launcher: enqueues `k` and reports launch-configuration errors at once.
template <typename K>
cudaError_t LaunchFunctor(const K& k, LaunchShape shape, cudaStream_t stream) {
  if (shape.grid <= 0) return cudaSuccess;
  RunFunctor<K><<<shape.grid, shape.block, 0, stream>>>(k);
  return cudaGetLastError();
}
#endif

// A kernel with no shared scratch uses this as its Shared type.
struct NoShared {};

}  // namespace dspark
