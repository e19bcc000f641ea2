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

// Before a device loop whose trip count is known only at run time: keep one copy of its body.
// A cold launch fetches every instruction it runs from DRAM (the L2 holds no code after a flush),
// so unrolled copies that run once cost more than the loop overhead they save.
#if defined(__CUDACC__)
#define DS_NO_UNROLL _Pragma("unroll 1")
#else
#define DS_NO_UNROLL
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
