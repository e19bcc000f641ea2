// Portability macros so that one kernel body compiles for the GPU (nvcc) and for the CPU
// grid emulator (g++), see kernels/common/grid.h.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DS_HD __host__ __device__
#define DS_HD_INLINE __host__ __device__ __forceinline__
#else
#define DS_HD
#define DS_HD_INLINE inline
#endif

namespace dspark {

// Integer helpers usable from kernel bodies.
DS_HD_INLINE int32_t CeilDiv(int32_t a, int32_t b) { return (a + b - 1) / b; }
DS_HD_INLINE int64_t CeilDiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }
DS_HD_INLINE int32_t MaxI(int32_t a, int32_t b) { return a > b ? a : b; }
DS_HD_INLINE int32_t MinI(int32_t a, int32_t b) { return a < b ? a : b; }
DS_HD_INLINE int32_t NextPow2(int32_t x) {
  int32_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

}  // namespace dspark
