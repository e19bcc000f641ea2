// Generic small kernels, each standing in for ONE PyTorch op (one launch), so that the op-chain
// implementations (kernels/token_map_impls.h, kernels/indexer_impls.h) issue the same number
// and kind of launches as the PyTorch code they reproduce, on the GPU and in CPU emulation.
//
// They are deliberately plain: one thread per output element (or per request, where PyTorch's
// kernel works that way), no fusion. Their cost is the point of the comparison.
#pragma once

#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

namespace dspark::ops {

// [threads per block] for every elementwise op here, as PyTorch's elementwise kernels use.
inline constexpr int32_t kOpThreads = 256;

inline LaunchShape ElementwiseShape(int32_t n) { return {CeilDiv(n, kOpThreads), kOpThreads}; }

DS_HD_INLINE int32_t GlobalThread(const ThreadCtx& c) { return c.block * c.block_dim + c.thread; }

// torch.arange(start, start + n, dtype=int32)
struct ArangeKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  int32_t* out;   // [n]
  int32_t n;      // [elements]
  int32_t start;  // value of out[0]

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = GlobalThread(c);
    if (i < n) out[i] = start + i;
  }
};

// torch.diff(in[: n + 1]): out[i] = in[i + 1] - in[i].
struct DiffKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* in;  // [n + 1]
  int32_t* out;       // [n]
  int32_t n;          // [elements] of the output

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = GlobalThread(c);
    if (i < n) out[i] = in[i + 1] - in[i];
  }
};

enum class BinaryOp : int32_t { kAdd, kSub };

// torch.add / torch.sub of two int32 tensors of the same length.
struct BinaryKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* a;  // [n]
  const int32_t* b;  // [n]
  int32_t* out;      // [n], may alias a or b
  int32_t n;         // [elements]
  BinaryOp op;

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = GlobalThread(c);
    if (i < n) out[i] = op == BinaryOp::kAdd ? a[i] + b[i] : a[i] - b[i];
  }
};

// tensor + python_int
struct AddScalarKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* a;  // [n]
  int32_t* out;      // [n], may alias a
  int32_t n;         // [elements]
  int32_t scalar;

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = GlobalThread(c);
    if (i < n) out[i] = a[i] + scalar;
  }
};

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
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = GlobalThread(c);
    if (i >= n) return;
    const int32_t end = MinI(cumsum[i], output_size);
    for (int32_t j = MaxI(cumsum[i] - repeats[i], 0); j < end; ++j) out[j] = i;
  }
};

// src.index_select(0, index) for a 1-D src. An index outside [0, src_len) yields 0: PyTorch
// would raise a device-side assert and kill the context; the simulator keeps running and the
// exact comparison against the reference reports the wrong value instead.
struct GatherKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* src;    // [src_len]
  int32_t src_len;       // [elements]
  const int32_t* index;  // [n]
  int32_t* out;          // [n]
  int32_t n;             // [elements]

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = GlobalThread(c);
    if (i >= n) return;
    const int32_t k = index[i];
    out[i] = (k >= 0 && k < src_len) ? src[k] : 0;
  }
};

// src.index_select(0, index) for a 2-D row-strided src: dst row i = src row index[i], first
// `cols` columns. One thread per output element, as PyTorch's index_select kernel. An index
// outside [0, src_rows) yields a zero row (see GatherKernel).
struct GatherRowsKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* src;    // [src_rows, src_stride]
  int32_t src_rows;      // [rows]
  int32_t src_stride;    // [int32]
  const int32_t* index;  // [rows]
  int32_t* dst;          // [rows, dst_stride]
  int32_t dst_stride;    // [int32]
  int32_t rows;          // [rows] of the output
  int32_t cols;          // [int32] columns copied per row

  LaunchShape Shape() const { return ElementwiseShape(rows * cols); }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = GlobalThread(c);
    if (i >= rows * cols) return;
    const int32_t row = i / cols, col = i % cols;
    const int32_t k = index[row];
    dst[row * dst_stride + col] = (k >= 0 && k < src_rows) ? src[k * src_stride + col] : 0;
  }
};

// dst[:rows, :cols].copy_(src) between row-strided tensors: the elementwise copy kernel PyTorch
// launches when either side is not contiguous (a cudaMemcpy cannot express the strides).
struct Copy2DKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* src;  // [rows, src_stride]
  int32_t src_stride;  // [int32]
  int32_t* dst;        // [rows, dst_stride]
  int32_t dst_stride;  // [int32]
  int32_t rows;        // [rows]
  int32_t cols;        // [int32]

  LaunchShape Shape() const { return ElementwiseShape(rows * cols); }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = GlobalThread(c);
    if (i >= rows * cols) return;
    const int32_t row = i / cols, col = i % cols;
    dst[row * dst_stride + col] = src[row * src_stride + col];
  }
};

// t[a:b, col] = value on a row-strided tensor: a fill over a strided view is one elementwise
// kernel in PyTorch (not a memset).
struct FillStridedKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  int32_t* dst;    // [count, stride]: element i is dst[i * stride]
  int32_t stride;  // [int32]
  int32_t count;   // [elements]
  int32_t value;

  LaunchShape Shape() const { return ElementwiseShape(count); }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = GlobalThread(c);
    if (i < count) dst[i * stride] = value;
  }
};

}  // namespace dspark::ops
