// The broadcasting ops of kernels/ops.cuh: TensorIterator's one launch for operands that are
// strided views or python scalars.
#pragma once

#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

#include "kernels/ops/elementwise.cuh"

namespace dspark::ops {

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
  DS_ELEMENTWISE_2D_KERNEL
  View2D a;
  View2D b;
  int32_t* out;   // [rows, cols]; may alias an operand read at the same element
  int32_t rows;   // [elements]
  int32_t cols;   // [elements]
  BinaryOp op;

  DS_HD void Element2(int32_t i, int32_t row, int32_t col) const {
    out[i] = ApplyBinary(op, a.At(row, col), b.At(row, col));
  }
};

// torch.where(mask, a, b) on int32, all operands broadcast views, out contiguous [rows, cols].
struct Where2DKernel {
  DS_ELEMENTWISE_2D_KERNEL
  View2D mask;
  View2D a;
  View2D b;
  int32_t* out;  // [rows, cols]
  int32_t rows;  // [elements]
  int32_t cols;  // [elements]

  DS_HD void Element2(int32_t i, int32_t row, int32_t col) const {
    out[i] = mask.At(row, col) != 0 ? a.At(row, col) : b.At(row, col);
  }
};

}  // namespace dspark::ops
