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


// torch.arange(start, start + n, dtype=int32)
struct ArangeKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  int32_t* out;   // [n]
  int32_t n;      // [elements]
  int32_t start;  // value of out[0]

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const { out[i] = start + i; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// torch.diff(in[: n + 1]): out[i] = in[i + 1] - in[i].
struct DiffKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* in;  // [n + 1]
  int32_t* out;       // [n]
  int32_t n;          // [elements] of the output

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const { out[i] = in[i + 1] - in[i]; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// The int32 binary ops the chains use. kFloorDiv / kRemainder follow Python (and torch's `//`, `%`):
// rounded towards minus infinity, remainder with the divisor's sign. Comparisons and kAnd give 0 / 1
// (a bool tensor stored as int32).
enum class BinaryOp : int32_t { kAdd, kSub, kMul, kFloorDiv, kRemainder, kMin, kMax, kLt, kGt, kEq, kNe, kAnd };

DS_HD_INLINE int32_t ApplyBinary(BinaryOp op, int32_t x, int32_t y) {
  switch (op) {
    case BinaryOp::kAdd: return x + y;
    case BinaryOp::kSub: return x - y;
    case BinaryOp::kMul: return x * y;
    case BinaryOp::kFloorDiv: {
      if (y == 0) return 0;  // torch raises on integer division by zero; no chain divides by 0
      const int32_t q = x / y;
      return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
    }
    case BinaryOp::kRemainder: {
      if (y == 0) return 0;
      const int32_t m = x % y;
      return (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
    }
    case BinaryOp::kMin: return x < y ? x : y;
    case BinaryOp::kMax: return x > y ? x : y;
    case BinaryOp::kLt: return x < y;
    case BinaryOp::kGt: return x > y;
    case BinaryOp::kEq: return x == y;
    case BinaryOp::kNe: return x != y;
    case BinaryOp::kAnd: return (x != 0) && (y != 0);
  }
  return 0;
}

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
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const { out[i] = ApplyBinary(op, a[i], b[i]); }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
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
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const { out[i] = a[i] + scalar; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
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

  // CPU path: only the threads that own elements. A thread past them has an empty chunk (no
  // global write), and the scan steps read only cells of lower threads, so skipping it changes
  // nothing an owning thread reads.
  void CpuRun(LaunchShape shape) const {
    const int32_t chunk = CeilDiv(n, kThreads);
    EmulateGridFirstThreads(*this, shape, chunk > 0 ? CeilDiv(n, chunk) : 0);
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
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const {
    const int32_t end = MinI(cumsum[i], output_size);
    for (int32_t j = MaxI(cumsum[i] - repeats[i], 0); j < end; ++j) out[j] = i;
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
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
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const {
    const int32_t k = index[i];
    out[i] = (k >= 0 && k < src_len) ? src[k] : 0;
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
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
  DS_HD int32_t Elements() const { return rows * cols; }
  DS_HD void Element(int32_t i) const { Element2(i, i / cols, i % cols); }
  DS_HD void Element2(int32_t /*i*/, int32_t row, int32_t col) const {
    const int32_t k = index[row];
    dst[row * dst_stride + col] = (k >= 0 && k < src_rows) ? src[k * src_stride + col] : 0;
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// src.index_select(0, index) with at most kMaxIndices indices, as PyTorch launches it then
// (indexSelectSmallIndex; index_select_out_cuda_impl picks it for numIndices <= 16): the grid
// spans one selected slice, min(ceil(cols / 128), 8 x SMs) blocks of min(cols, 128) threads, and
// every thread walks all the indices in order, loading each index and then its slice elements.
// With cold caches that is a chain of dependent loads per index, which is what this op costs in
// vLLM's chains. The output equals GatherKernel's (cols = 1) or GatherRowsKernel's
// (tests/kernels/test_ops_index_select.cc). Also 1-D: cols = 1, strides 1.
struct IndexSelectSmallKernel {
  static constexpr int32_t kMaxIndices = 16;    // PyTorch's small-index bound
  static constexpr int32_t kSliceThreads = 128;  // PyTorch's block bound
  static constexpr int32_t kMaxBlocks = 8 * 132;  // 8 x an H200's SMs
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* src;    // [src_rows, src_stride]
  int32_t src_rows;      // [rows]
  int32_t src_stride;    // [int32]
  const int32_t* index;  // [rows]
  int32_t* dst;          // [rows, dst_stride]
  int32_t dst_stride;    // [int32]
  int32_t rows;          // [rows] of the output, at most kMaxIndices
  int32_t cols;          // [int32] columns copied per row

  LaunchShape Shape() const {
    if (rows <= 0 || cols <= 0) return {0, 1};
    return {MinI(CeilDiv(cols, kSliceThreads), kMaxBlocks), MinI(cols, kSliceThreads)};
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    for (int32_t i = 0; i < rows; ++i) {
      const int32_t k = index[i];
      const bool ok = k >= 0 && k < src_rows;
      for (int32_t col = c.block * c.block_dim + c.thread; col < cols; col += c.grid_dim * c.block_dim)
        dst[i * dst_stride + col] = ok ? src[k * src_stride + col] : 0;
    }
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
  DS_HD int32_t Elements() const { return rows * cols; }
  DS_HD void Element(int32_t i) const { Element2(i, i / cols, i % cols); }
  DS_HD void Element2(int32_t /*i*/, int32_t row, int32_t col) const {
    dst[row * dst_stride + col] = src[row * src_stride + col];
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
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
  DS_HD int32_t Elements() const { return count; }
  DS_HD void Element(int32_t i) const { dst[i * stride] = value; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// ---- Broadcasting ops (what torch's TensorIterator does for `a[:, None] + b[None, :]`, a
// strided view, or a python scalar operand): one launch, one thread per output element.

// An int32 operand seen as [rows, cols]: element (i, j) is p[i * row_stride + j * col_stride], or
// `value` when p is null (a python scalar). A stride of 0 broadcasts along that axis.
struct View2D {
  const int32_t* p;    // [rows * row_stride + cols * col_stride] or nullptr
  int32_t row_stride;  // [int32]
  int32_t col_stride;  // [int32]
  int32_t value;       // the scalar when p == nullptr

  DS_HD int32_t At(int32_t i, int32_t j) const {
    return p == nullptr ? value : p[static_cast<int64_t>(i) * row_stride + static_cast<int64_t>(j) * col_stride];
  }
  static View2D Scalar(int32_t v) { return {nullptr, 0, 0, v}; }
  // A contiguous [n] tensor indexed by the row (as `x[:, None]`) or by the column (as `x[None, :]`).
  static View2D Column(const int32_t* x) { return {x, 1, 0, 0}; }
  static View2D Row(const int32_t* x) { return {x, 0, 1, 0}; }
  // A row-major [rows, cols] tensor with the given row stride.
  static View2D Matrix(const int32_t* x, int32_t row_stride) { return {x, row_stride, 1, 0}; }
};

// out[i, j] = a(i, j) op b(i, j), out contiguous [rows, cols]. A 1-D op is rows = n, cols = 1.
struct Binary2DKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  View2D a;
  View2D b;
  int32_t* out;   // [rows, cols]; may alias an operand read at the same element
  int32_t rows;   // [elements]
  int32_t cols;   // [elements]
  BinaryOp op;

  LaunchShape Shape() const { return ElementwiseShape(rows * cols); }
  DS_HD int32_t Elements() const { return rows * cols; }
  DS_HD void Element(int32_t i) const { Element2(i, i / cols, i % cols); }
  DS_HD void Element2(int32_t i, int32_t row, int32_t col) const {
    out[i] = ApplyBinary(op, a.At(row, col), b.At(row, col));
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// torch.where(mask, a, b) on int32, all operands broadcast views, out contiguous [rows, cols].
struct Where2DKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  View2D mask;
  View2D a;
  View2D b;
  int32_t* out;  // [rows, cols]
  int32_t rows;  // [elements]
  int32_t cols;  // [elements]

  LaunchShape Shape() const { return ElementwiseShape(rows * cols); }
  DS_HD int32_t Elements() const { return rows * cols; }
  DS_HD void Element(int32_t i) const { Element2(i, i / cols, i % cols); }
  DS_HD void Element2(int32_t i, int32_t row, int32_t col) const {
    out[i] = mask.At(row, col) != 0 ? a.At(row, col) : b.At(row, col);
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// table[row_index[:, None], col_index] (advanced indexing) on a row-strided 2-D int32 table: out[i, j]
// = table[row_index[i], col_index(i, j)]. An index outside [0, table_rows) x [0, table_cols) yields
// 0 (see GatherKernel: torch would device-assert; the exact comparison reports the value instead).
struct GatherIndex2DKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* table;      // [table_rows, table_stride]
  int32_t table_rows;        // [rows]
  int32_t table_cols;        // [int32] columns that may be read
  int32_t table_stride;      // [int32]
  const int32_t* row_index;  // [rows] table row per output row
  View2D col_index;          // [rows, cols] table column per output element
  int32_t* out;              // [rows, cols]
  int32_t rows;              // [elements]
  int32_t cols;              // [elements]

  LaunchShape Shape() const { return ElementwiseShape(rows * cols); }
  DS_HD int32_t Elements() const { return rows * cols; }
  DS_HD void Element(int32_t i) const { Element2(i, i / cols, i % cols); }
  DS_HD void Element2(int32_t i, int32_t row, int32_t col) const {
    const int32_t r = row_index[row], k = col_index.At(row, col);
    out[i] = (r >= 0 && r < table_rows && k >= 0 && k < table_cols)
                 ? table[static_cast<int64_t>(r) * table_stride + k]
                 : 0;
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// x.to(torch.int64)
struct CastToInt64Kernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* in;  // [n]
  int64_t* out;       // [n]
  int32_t n;          // [elements]

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const { out[i] = in[i]; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// torch.where(mask, a, scalar) with an int64 `a`.
struct WhereInt64Kernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* mask;  // [n] 0 / 1
  const int64_t* a;     // [n]
  int64_t scalar;       // taken where mask == 0
  int64_t* out;         // [n]
  int32_t n;            // [elements]

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const { out[i] = mask[i] != 0 ? a[i] : scalar; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// (x != scalar) for an int64 tensor, as an int32 0 / 1 mask.
struct NeInt64ScalarKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int64_t* in;  // [n]
  int64_t scalar;
  int32_t* out;       // [n]
  int32_t n;          // [elements]

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const { out[i] = in[i] != scalar; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// t[:rows, :cols] = value on a row-strided tensor (one elementwise kernel, not a memset).
struct Fill2DKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  int32_t* dst;    // [rows, stride]
  int32_t stride;  // [int32]
  int32_t rows;    // [rows]
  int32_t cols;    // [int32]
  int32_t value;

  LaunchShape Shape() const { return ElementwiseShape(rows * cols); }
  DS_HD int32_t Elements() const { return rows * cols; }
  DS_HD void Element(int32_t i) const { Element2(i, i / cols, i % cols); }
  DS_HD void Element2(int32_t /*i*/, int32_t row, int32_t col) const {
    dst[static_cast<int64_t>(row) * stride + col] = value;
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// cub::DeviceScan's first kernel (DeviceScanInitKernel): clears the tile-status words the scan
// kernel's decoupled look-back reads. PyTorch's cumsum and repeat_interleave issue it before
// every scan, so each scan is two launches (VLLM_CODE_MAP.md s.2.8).
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

// int64 tensor >= scalar, as a bool tensor stored as int32 0 / 1.
struct GeInt64ScalarKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int64_t* a;  // [n]
  int64_t scalar;
  int32_t* out;      // [n]
  int32_t n;         // [elements]

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const { out[i] = a[i] >= scalar; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// tensor.clamp_(min=0) of a strided [rows, cols] int32 tensor, in place.
struct ClampMinZero2DKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  int32_t* x;      // [rows, stride]
  int32_t stride;  // [int32]
  int32_t rows;    // [rows]
  int32_t cols;    // [int32]

  LaunchShape Shape() const { return ElementwiseShape(rows * cols); }
  DS_HD int32_t Elements() const { return rows * cols; }
  DS_HD void Element(int32_t i) const { Element2(i, i / cols, i % cols); }
  DS_HD void Element2(int32_t /*i*/, int32_t row, int32_t col) const {
    int32_t& v = x[static_cast<int64_t>(row) * stride + col];
    v = v < 0 ? 0 : v;
  }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

}  // namespace dspark::ops
