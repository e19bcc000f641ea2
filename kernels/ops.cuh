// Generic small kernels, each standing in for ONE PyTorch op (one launch), so that the op-chain
// implementations (kernels/token_map_impls.h, kernels/indexer_impls.h) issue the same number
// and kind of launches as the PyTorch code they reproduce, on the GPU and in CPU emulation.
//
// They are deliberately plain: one thread per output element (or per request, where PyTorch's
// kernel works that way), no fusion. Their cost is the point of the comparison.
//
// One file per kind of op, each included here:
//   kernels/ops/elementwise.cuh  arange, diff, binary and scalar ops, casts, fills, strided copies
//   kernels/ops/scan.cuh         cumsum (tile init + scan), repeat_interleave
//   kernels/ops/gather.cuh       index_select (elementwise and small-index), 2-D advanced indexing
//   kernels/ops/broadcast.cuh    broadcasting binary ops and where over strided views
#pragma once

#include "kernels/ops/broadcast.cuh"
#include "kernels/ops/elementwise.cuh"
#include "kernels/ops/gather.cuh"
#include "kernels/ops/scan.cuh"
