// DeepSeek-V4's C128A top-k metadata (vLLM's `_build_c128a_topk_metadata_kernel`, called by
// DeepseekV4SparseMLAMetadataBuilder._build_c128a_metadata for the ratio-128 group): one program
// per token t of [0, num_tokens), num_tokens = N_d + N_p.
//
//   position(t)  = seq_lens[r] - qlen_r + (t - qsl[r]) for the request r holding t on the DEVICE
//                  boundaries (the runner's positions buffer), 0 for a graph-padding token
//   nc(t)        = min((position(t) + 1) // ratio, width)
//   t <  N_d:    decode row t, column c < width: c < nc ? bt[req, c / E] * E + c % E : -1, where
//                req = token_to_req[t] (the state's token map) and E = block_size / ratio;
//                decode_lens[t] = slot_mapping[t] >= 0 ? nc : 0
//   t >= N_d:    prefill row t - N_d, column c < width: c < nc ? c : -1
// `width` is the step's active top-k width (C128aWidth, a host value), the rows' stride `stride`.
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/common/grid.h"
#include "kernels/common/hd.h"
#include "kernels/token_map.cuh"

namespace dspark {

struct C128aParams {
  const int32_t* query_start_loc;  // [num_reqs + 1] device boundaries
  const int32_t* seq_lens;         // [num_reqs]
  const int32_t* token_to_req;     // [num_tokens] the state's token map (req_id_per_token)
  const int32_t* block_table;      // [num_reqs, bt_stride]
  const int64_t* slot_mapping;     // [num_tokens]
  int32_t* decode_indices;         // [num_decode_tokens, stride]
  int32_t* decode_lens;            // [num_decode_tokens]
  int32_t* prefill_indices;        // [num_tokens - num_decode_tokens, stride]
  int32_t num_reqs;
  int32_t num_tokens;              // N_d + N_p
  int32_t num_decode_tokens;       // N_d
  int32_t bt_stride;
  int32_t ratio;                   // 128
  int32_t block_size;              // [tokens per block] uncompressed (E = block_size / ratio)
  int32_t width;                   // [entries] active top-k width, a multiple of 128
  int32_t stride;                  // [int32] row stride of both index buffers, >= width
};

inline absl::Status CanImplementC128a(const C128aParams& p) {
  if (p.query_start_loc == nullptr || p.seq_lens == nullptr || p.token_to_req == nullptr ||
      p.block_table == nullptr || p.slot_mapping == nullptr || p.decode_indices == nullptr ||
      p.decode_lens == nullptr || p.prefill_indices == nullptr)
    return absl::InvalidArgumentError("C128aParams: every pointer must be non-null");
  if (p.num_tokens < 0 || p.num_decode_tokens < 0 || p.num_decode_tokens > p.num_tokens || p.num_reqs < 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "C128aParams: num_tokens=%d, num_decode_tokens=%d, num_reqs=%d: expected 0 <= N_d <= N, R >= 0",
        p.num_tokens, p.num_decode_tokens, p.num_reqs));
  if (p.ratio <= 0 || p.block_size < p.ratio || p.block_size % p.ratio != 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "C128aParams: block_size=%d must be a positive multiple of ratio=%d", p.block_size, p.ratio));
  if (p.width <= 0 || p.width % 128 != 0 || p.width > p.stride)
    return absl::InvalidArgumentError(absl::StrFormat(
        "C128aParams: width=%d must be a positive multiple of 128 and <= the row stride %d", p.width, p.stride));
  return absl::OkStatus();
}

// The compressed entries token t sees (nc above).
DS_HD_INLINE int32_t C128aCount(const C128aParams& p, int32_t t) {
  int32_t pos = 0;
  if (p.num_reqs > 0 && t < p.query_start_loc[p.num_reqs]) {
    const int32_t r = FindRequest(p.query_start_loc, p.num_reqs, t);
    pos = p.seq_lens[r] - (p.query_start_loc[r + 1] - p.query_start_loc[r]) + (t - p.query_start_loc[r]);
  }
  return MinI((pos + 1) / p.ratio, p.width);
}

DS_HD_INLINE int32_t C128aCell(const C128aParams& p, int32_t t, int32_t nc, int32_t c) {
  if (c >= nc) return -1;
  if (t >= p.num_decode_tokens) return c;
  const int32_t e = p.block_size / p.ratio;
  const int32_t req = p.token_to_req[t];
  return p.block_table[static_cast<int64_t>(req) * p.bt_stride + c / e] * e + c % e;
}

struct C128aKernel {
  static constexpr int32_t kThreads = 128;
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  C128aParams p;

  static LaunchShape Shape(const C128aParams& p) { return {p.num_tokens, kThreads}; }

  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t t = c.block;
    if (t >= p.num_tokens) return;
    const int32_t nc = C128aCount(p, t);
    const bool decode = t < p.num_decode_tokens;
    int32_t* row = decode ? p.decode_indices + static_cast<int64_t>(t) * p.stride
                          : p.prefill_indices + static_cast<int64_t>(t - p.num_decode_tokens) * p.stride;
    for (int32_t col = c.thread; col < p.width; col += c.block_dim) row[col] = C128aCell(p, t, nc, col);
    if (decode && c.thread == 0) p.decode_lens[t] = p.slot_mapping[t] >= 0 ? nc : 0;
  }

  // CPU path: the same element functions, token by token.
  void CpuRun(LaunchShape shape) const {
    const int32_t n = MinI(shape.grid, p.num_tokens);
    for (int32_t t = 0; t < n; ++t) {
      const int32_t nc = C128aCount(p, t);
      const bool decode = t < p.num_decode_tokens;
      int32_t* row = decode ? p.decode_indices + static_cast<int64_t>(t) * p.stride
                            : p.prefill_indices + static_cast<int64_t>(t - p.num_decode_tokens) * p.stride;
      for (int32_t col = 0; col < p.width; ++col) row[col] = C128aCell(p, t, nc, col);
      if (decode) p.decode_lens[t] = p.slot_mapping[t] >= 0 ? nc : 0;
    }
  }
};

}  // namespace dspark
