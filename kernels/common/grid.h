// One kernel body, two executors.
//
// A kernel is a plain struct ("functor") holding its params by value, with
//
//   struct Shared { ... };                  // block-shared scratch (may be empty)
//   static constexpr int kPhases = P;       // phases separated by a block barrier
//   DS_HD void Phase(int phase, const ThreadCtx& ctx, Shared& smem) const;
//
// On the GPU, RunFunctor<<<grid, block>>> runs every phase in order with __syncthreads()
// between phases. A kernel whose blocks have different roles may also define
//
//   DS_HD int PhasesOf(int32_t block) const;  // phases [0, n) that `block` runs, n <= kPhases
//
// for blocks whose later phases do nothing; both executors then run only those phases, and the
// GPU loop over them is not unrolled (one copy of Phase's code: a cold launch fetches every
// instruction it runs from DRAM, so code size is time). On the CPU, EmulateGrid runs phase p for every thread of a block before
// any thread starts phase p + 1, which is exactly the guarantee a block barrier gives. Bodies
// therefore may use shared memory and barriers, but no warp intrinsics and no inter-block
// communication (neither is expressible in the emulator).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

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

// A kernel with no shared scratch uses this as its Shared type.
struct NoShared {};

// An elementwise kernel (one phase, no shared memory, thread i of the grid handles element i
// alone) defines its element function once, used by both executors:
//   DS_HD int32_t Elements() const;          // [elements] threads past it do nothing
//   DS_HD void Element(int32_t i) const;     // the body for element i
//   DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
template <typename K>
DS_HD_INLINE void ElementPhase(const K& k, const ThreadCtx& c) {
  const int32_t i = c.block * c.block_dim + c.thread;
  if (i < k.Elements()) k.Element(i);
}

// A 2-D elementwise kernel over a row-major [rows, cols] grid (a `cols` member) may give its
// element function by row and column too,
//   DS_HD void Element2(int32_t i, int32_t row, int32_t col) const;  // i = row * cols + col
// with Element(i) calling Element2(i, i / cols, i % cols): the CPU loop then walks the rows
// without a division per element.
template <typename K, typename = void>
struct HasElement2 : std::false_type {};
template <typename K>
struct HasElement2<K, decltype(static_cast<void>(std::declval<const K&>().Element2(int32_t{0}, int32_t{0}, int32_t{0})),
                               static_cast<void>(std::declval<const K&>().cols))> : std::true_type {};

// The members every 2-D elementwise kernel over [rows, cols] shares (one phase, no shared memory,
// a thread per element, Element(i) by row and column): the kernel declares `rows` and `cols` and
// its Element2, and opens its body with this line. Member functions only, so the kernel stays an
// aggregate (brace-initialised by its fields alone).
#define DS_ELEMENTWISE_2D_KERNEL                                                           \
  static constexpr int kPhases = 1;                                                       \
  using Shared = NoShared;                                                                \
  LaunchShape Shape() const { return ElementwiseShape(rows * cols); }                     \
  DS_HD int32_t Elements() const { return rows * cols; }                                  \
  DS_HD void Element(int32_t i) const { Element2(i, i / cols, i % cols); }                \
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }

// An elementwise kernel may also give the emulator a row loop over its first n elements, in the
// element order (row-major), e.g. a row copy:
//   void CpuElements(int64_t n) const;   // host only
template <typename K, typename = void>
struct HasCpuElements : std::false_type {};
template <typename K>
struct HasCpuElements<K, decltype(std::declval<const K&>().CpuElements(int64_t{0}))> : std::true_type {};

template <typename K, typename = void>
struct IsElementwise {
  static constexpr bool value = false;
};
template <typename K>
struct IsElementwise<K, decltype(static_cast<void>(std::declval<const K&>().Element(int32_t{0})),
                                 static_cast<void>(std::declval<const K&>().Elements()))> {
  static constexpr bool value = K::kPhases == 1 && std::is_same<typename K::Shared, NoShared>::value;
};

template <typename K, typename = void>
struct HasPhasesOf : std::false_type {};
template <typename K>
struct HasPhasesOf<K, decltype(static_cast<void>(std::declval<const K&>().PhasesOf(int32_t{0})))> : std::true_type {};

// The phases block `block` of `k` runs.
template <typename K>
DS_HD_INLINE int PhaseCount(const K& k, int32_t block) {
  if constexpr (HasPhasesOf<K>::value) {
    return k.PhasesOf(block);
  } else {
    static_cast<void>(k);
    static_cast<void>(block);
    return K::kPhases;
  }
}

// Runs `k` on the CPU thread by thread, phase by phase. Deterministic: blocks in order,
// threads in order.
template <typename K>
void EmulateGridPerThread(const K& k, LaunchShape shape) {
  using Shared = typename K::Shared;
  Shared smem;
  for (int32_t b = 0; b < shape.grid; ++b) {
    // Shared memory starts undefined on a GPU; poison it so that a body reading a cell no
    // thread wrote fails the exact comparisons instead of passing by luck.
    std::memset(static_cast<void*>(&smem), 0xA5, sizeof(Shared));
    for (int p = 0; p < PhaseCount(k, b); ++p) {
      for (int32_t t = 0; t < shape.block; ++t) {
        k.Phase(p, ThreadCtx{b, t, shape.block, shape.grid}, smem);
      }
    }
  }
}

// Blocks [0, grid) with only threads [0, threads) of each (block_dim stays shape.block): for a
// kernel whose threads past `threads` do nothing observable (no global write, no shared cell an
// earlier thread reads).
template <typename K>
void EmulateGridFirstThreads(const K& k, LaunchShape shape, int32_t threads) {
  using Shared = typename K::Shared;
  Shared smem;
  threads = std::min(threads, shape.block);
  for (int32_t b = 0; b < shape.grid; ++b) {
    std::memset(static_cast<void*>(&smem), 0xA5, sizeof(Shared));
    for (int p = 0; p < PhaseCount(k, b); ++p)
      for (int32_t t = 0; t < threads; ++t) k.Phase(p, ThreadCtx{b, t, shape.block, shape.grid}, smem);
  }
}

// A kernel may give the emulator a faster CPU path over its own element functions,
//   void CpuRun(LaunchShape shape) const;   // host only
// that loops over the step's items instead of calling every thread of the grid per phase. Each
// is tested byte-identical to EmulateGridPerThread (tests/kernels/test_cpu_paths.cc).
template <typename K, typename = void>
struct HasCpuRun : std::false_type {};
template <typename K>
struct HasCpuRun<K, decltype(std::declval<const K&>().CpuRun(LaunchShape{}))> : std::true_type {};

// Off: every kernel runs thread by thread (EmulateGridPerThread), for the tests that compare.
inline bool& CpuPathsEnabled() {
  static bool enabled = true;
  return enabled;
}

// Runs `k` on the CPU over the whole grid. An elementwise kernel runs as a loop over its
// elements: the same element function in the same order (thread b * block + t is element i),
// without a call per idle thread, by rows for a 2-D one (tests/kernels/test_element_loop.cc:
// byte-identical buffers).
// A kernel with a CpuRun runs that.
template <typename K>
void EmulateGrid(const K& k, LaunchShape shape) {
  if (!CpuPathsEnabled()) {
    EmulateGridPerThread(k, shape);
  } else if constexpr (IsElementwise<K>::value) {
    const int64_t threads = static_cast<int64_t>(shape.grid) * shape.block;
    const int64_t n = std::min<int64_t>(k.Elements(), threads);
    if constexpr (HasCpuElements<K>::value) {
      if (n > 0) k.CpuElements(n);
    } else if constexpr (HasElement2<K>::value) {
      if (n <= 0 || k.cols <= 0) return;
      const int32_t cols = k.cols, full = static_cast<int32_t>(n / cols), rest = static_cast<int32_t>(n % cols);
      for (int32_t row = 0; row < full; ++row)
        for (int32_t col = 0; col < cols; ++col) k.Element2(row * cols + col, row, col);
      for (int32_t col = 0; col < rest; ++col) k.Element2(full * cols + col, full, col);
    } else {
      for (int32_t i = 0; i < n; ++i) k.Element(i);
    }
  } else if constexpr (HasCpuRun<K>::value) {
    k.CpuRun(shape);
  } else {
    EmulateGridPerThread(k, shape);
  }
}

#if defined(__CUDACC__)
// Programmatic dependent launch (sm_90+; both are no-ops for a kernel launched without it):
// every kernel lets a successor launched with LaunchFunctorDependent start at once, and waits,
// before it exits, for the predecessor it was launched after. So a dependent kernel may overlap
// its predecessor but never completes before it: stream order holds for whatever follows.
template <typename K>
__global__ void RunFunctor(const K k) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  __shared__ typename K::Shared smem;
  const ThreadCtx ctx{static_cast<int32_t>(blockIdx.x), static_cast<int32_t>(threadIdx.x),
                      static_cast<int32_t>(blockDim.x), static_cast<int32_t>(gridDim.x)};
  if constexpr (HasPhasesOf<K>::value) {
    const int phases = k.PhasesOf(ctx.block);
#pragma unroll 1
    for (int p = 0; p < phases; ++p) {
      if (p > 0) __syncthreads();
      k.Phase(p, ctx, smem);
    }
  } else {
#pragma unroll
    for (int p = 0; p < K::kPhases; ++p) {
      if (p > 0) __syncthreads();
      k.Phase(p, ctx, smem);
    }
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Thin launcher: enqueues `k` and reports launch-configuration errors at once.
template <typename K>
cudaError_t LaunchFunctor(const K& k, LaunchShape shape, cudaStream_t stream) {
  if (shape.grid <= 0) return cudaSuccess;
  RunFunctor<K><<<shape.grid, shape.block, 0, stream>>>(k);
  return cudaGetLastError();
}

// Enqueues `k` as a programmatic dependent launch: it may start while the previous kernel on
// `stream` still runs, so it must not read what that kernel writes (it waits for it only before
// it exits, see RunFunctor). Captured into a graph, the edge is a programmatic one.
template <typename K>
cudaError_t LaunchFunctorDependent(const K& k, LaunchShape shape, cudaStream_t stream) {
  if (shape.grid <= 0) return cudaSuccess;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(shape.grid));
  config.blockDim = dim3(static_cast<unsigned>(shape.block));
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, RunFunctor<K>, k);
}
#endif

}  // namespace dspark
