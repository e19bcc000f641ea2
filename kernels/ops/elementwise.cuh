// The elementwise ops of kernels/ops.cuh: one thread per output element, each one PyTorch
// elementwise kernel (arange, diff, binary ops, scalar ops, casts, fills and strided copies).
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

// A cast between the int32 and int64 tensors: x.to(torch.int64), or int32_dst.copy_(int64_src),
// the narrowing copy_ PyTorch runs on the device after moving an int64 host tensor there (values
// fit: token-to-request indices).
template <class From, class To>
struct CastKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const From* in;  // [n]
  To* out;         // [n]
  int32_t n;       // [elements]

  LaunchShape Shape() const { return ElementwiseShape(n); }
  DS_HD int32_t Elements() const { return n; }
  DS_HD void Element(int32_t i) const { out[i] = static_cast<To>(in[i]); }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

using CastToInt64Kernel = CastKernel<int32_t, int64_t>;
using CastToInt32Kernel = CastKernel<int64_t, int32_t>;

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
  DS_ELEMENTWISE_2D_KERNEL
  int32_t* x;      // [rows, stride]
  int32_t stride;  // [int32]
  int32_t rows;    // [rows]
  int32_t cols;    // [int32]

  DS_HD void Element2(int32_t /*i*/, int32_t row, int32_t col) const {
    int32_t& v = x[static_cast<int64_t>(row) * stride + col];
    v = v < 0 ? 0 : v;
  }
};

// t[:rows, :cols] = value on a row-strided tensor (one elementwise kernel, not a memset).
struct Fill2DKernel {
  DS_ELEMENTWISE_2D_KERNEL
  int32_t* dst;    // [rows, stride]
  int32_t stride;  // [int32]
  int32_t rows;    // [rows]
  int32_t cols;    // [int32]
  int32_t value;

  DS_HD void Element2(int32_t /*i*/, int32_t row, int32_t col) const {
    dst[static_cast<int64_t>(row) * stride + col] = value;
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
  DS_HD int32_t Elements() const { return count; }
  DS_HD void Element(int32_t i) const { dst[i * stride] = value; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const { ElementPhase(*this, c); }
};

// dst[:rows, :cols].copy_(src) between row-strided tensors: the elementwise copy kernel PyTorch
// launches when either side is not contiguous (a cudaMemcpy cannot express the strides).
struct Copy2DKernel {
  DS_ELEMENTWISE_2D_KERNEL
  const int32_t* src;  // [rows, src_stride]
  int32_t src_stride;  // [int32]
  int32_t* dst;        // [rows, dst_stride]
  int32_t dst_stride;  // [int32]
  int32_t rows;        // [rows]
  int32_t cols;        // [int32]

  DS_HD void Element2(int32_t /*i*/, int32_t row, int32_t col) const {
    dst[row * dst_stride + col] = src[row * src_stride + col];
  }
  // CPU path: elements [0, n) row by row, each row one loop (the same stores in the same order).
  void CpuElements(int64_t n) const {
    for (int64_t row = 0, left = n; left > 0; ++row, left -= cols) {
      const int32_t m = static_cast<int32_t>(left < cols ? left : cols);
      int32_t* d = dst + row * dst_stride;
      const int32_t* s = src + row * src_stride;
      for (int32_t col = 0; col < m; ++col) d[col] = s[col];
    }
  }
};

}  // namespace dspark::ops
