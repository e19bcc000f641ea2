// The scan ops of kernels/ops.cuh: torch.cumsum's two launches (cub's tile init and the scan)
// and torch.repeat_interleave's compute kernel, which writes each request's range from the scan.
#pragma once

#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

#include "kernels/ops/elementwise.cuh"

namespace dspark::ops {

// torch.cumsum(in, 0) in ONE block, deterministic: each of the 256 threads sums a contiguous
// chunk, the 256 chunk sums are scanned Hillis-Steele in shared memory (log2(256) = 8 phases,
// double-buffered so no phase reads a cell another thread writes in it), then each thread
// rewrites its chunk with the running sum. Integer addition, fixed order: identical results
// on every run and on CPU emulation.
struct InclusiveScanKernel {
  static constexpr int32_t kThreads = 256;
  static constexpr int32_t kSteps = 8;  // log2(kThreads)
  static constexpr int kPhases = kSteps + 2;
  struct Shared {
    int32_t buf[2][kThreads];
  };
  const int32_t* in;  // [n]
  int32_t* out;       // [n] inclusive prefix sums; must not alias `in`
  int32_t n;          // [elements]

  LaunchShape Shape() const { return {1, kThreads}; }
  DS_HD void Phase(int phase, const ThreadCtx& c, Shared& s) const {
    const int32_t chunk = CeilDiv(n, kThreads);
    const int32_t begin = MinI(c.thread * chunk, n);
    const int32_t end = MinI(begin + chunk, n);
    if (phase == 0) {
      int32_t sum = 0;
      for (int32_t i = begin; i < end; ++i) sum += in[i];
      s.buf[0][c.thread] = sum;
      return;
    }
    if (phase <= kSteps) {
      const int32_t offset = 1 << (phase - 1);
      const int32_t* src = s.buf[(phase - 1) & 1];
      int32_t* dst = s.buf[phase & 1];
      dst[c.thread] = src[c.thread] + (c.thread >= offset ? src[c.thread - offset] : 0);
      return;
    }
    // After kSteps (even) steps the inclusive chunk sums are back in buf[0].
    int32_t running = c.thread > 0 ? s.buf[0][c.thread - 1] : 0;
    for (int32_t i = begin; i < end; ++i) {
      running += in[i];
      out[i] = running;
    }
  }

  // CPU path: only the threads that own elements. A thread past them has an empty chunk (no
  // global write), and the scan steps read only cells of lower threads, so skipping it changes
  // nothing an owning thread reads.
  void CpuRun(LaunchShape shape) const {
    const int32_t chunk = CeilDiv(n, kThreads);
    EmulateGridFirstThreads(*this, shape, chunk > 0 ? CeilDiv(n, chunk) : 0);
  }
};

// cub::DeviceScan's first kernel (DeviceScanInitKernel): clears the tile-status words the scan
// kernel's decoupled look-back reads. PyTorch's cumsum and repeat_interleave issue it before
// every scan, so each scan is two launches (docs/states.md s.2.8).
struct ScanTileInitKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  int32_t* tile_status;  // [tiles]
  int32_t tiles;         // [tiles] ceil(n / tile items), at least 1

  LaunchShape Shape() const { return ElementwiseShape(tiles); }
  DS_HD int32_t Elements() const { return tiles; }
  DS_HD void Element(int32_t i) const { tile_status[i] = 0; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// torch.repeat_interleave(repeats, output_size=output_size) on CUDA: request i writes its own
// range [cumsum[i] - repeats[i], cumsum[i]) with the value i, one thread per request (PyTorch
// uses a warp per request; the work per request is the same serial range). Writes past
// output_size are dropped, so a host output_size smaller than the device total cannot write
// out of bounds; entries of a larger output_size that no request covers stay unwritten, as in
// PyTorch, whose result tensor is torch.empty.
struct RepeatInterleaveKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* repeats;  // [n] non-negative
  const int32_t* cumsum;   // [n] inclusive prefix sums of repeats
  int32_t* out;            // [output_size]
  int32_t n;               // [requests]
  int32_t output_size;     // [elements] taken from the host (output_size=...)

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const {
    const int32_t end = MinI(cumsum[i], output_size);
    for (int32_t j = MaxI(cumsum[i] - repeats[i], 0); j < end; ++j) out[j] = i;
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

}  // namespace dspark::ops
