// SWA builder, fused (PR #56562 semantics): per-token sliding-window slot indices from the
// *device* query boundaries, in one launch, straight into persistent buffers.
//
// For token t < N of request r (t real iff t < M = qsl[R], read on the device):
//   pos          = (seq_lens[r] - qlen_r) + (t - qsl[r])
//   window       = [max(pos - W + 1, 0), pos],  len = its length
//   swa_lens[t]  = len
//   swa_indices[t, j] = block_table[r, p / bs] * bs + p % bs  for p = window_start + j, j < len
//                     = -1                                     for len <= j < W
// Invalid tokens get length 0 and a row of -1: vLLM's _compute_swa_indices_and_lens_kernel
// (sparse_swa.py, read_file id 61399074654) reads is_valid_token = slot_mapping >= 0 and, for an
// invalid token, stores len 0 and clears the row "so a padded token cannot gather through stale
// indices". That covers graph padding (slot -1 by construction) and any real token whose slot is
// -1 (e.g. masked-mode pruned drafts). vLLM reads nothing else; this kernel also treats
// M <= t < N as invalid whatever its slot, so it never resolves a request for a padding token.
// Rows at or past N are not written: a graph captured for N tokens never reads them.
//
// DSpark draft rows (noncausal_width > 0), vLLM's _compute_dspark_noncausal_swa_indices_kernel
// (sparse_swa.py, read_file id 61399074654): an invalid token as above; otherwise every token of request r sees [max(prefix - W, 0), seq_lens[r]) with
// prefix = seq_lens[r] - qlen_r (the window before the block and the whole block, future query
// tokens included), swa_lens[t] = that span's length, and the row (stride noncausal_width,
// SwaNoncausalWidth) holds its first noncausal_width slots, -1 past the length.
//
// Layout: 32 lanes per token row, 8 rows in flight per 256-thread block, 16 rows per block.
// Lane l writes columns l, l + 32, ..., so each store instruction of a row group covers 128
// consecutive bytes. The 32 lanes of a row resolve the row redundantly (same addresses, one
// broadcast transaction) instead of waiting on a barrier for one lane to do it.
//
// Preconditions on device data (not checkable without a sync): qsl non-decreasing,
// qsl[R] <= N, and block_table has a column for every position < seq_lens[r]. A token whose
// position would be negative (seq_len < qlen, inconsistent input) gets an empty window.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/batch.h"
#include "kernels/builder_lookup.cuh"
#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

namespace dspark {

struct SwaParams {
  const int32_t* query_start_loc;  // [num_reqs + 1] device boundaries, non-decreasing
  const int32_t* seq_lens;         // [num_reqs] context incl. current query
  const int32_t* block_table;      // [num_reqs, bt_stride] SWA cache block ids
  const int32_t* token_to_req;     // [>= num_tokens] request per token from the mapping kernel,
                                   //   or nullptr to search query_start_loc per block
  int32_t* swa_lens;               // [>= num_tokens] window length per token
  int32_t* swa_indices;            // [>= num_tokens, window] slot per window cell, -1 past len
  int32_t num_reqs;                // R: requests incl. zero-length padding requests
  int32_t num_tokens;              // N: [tokens] rows written (M real, then padding)
  int32_t bt_stride;               // [int32] row stride of block_table
  int32_t window;                  // W: [tokens] window length, also the row stride of swa_indices
  int32_t block_size;              // bs: [tokens per block] SWA cache block size
  int32_t token_offset = 0;        // [tokens] first row SwaKernel writes: rows [token_offset,
                                   //   token_offset + num_tokens) (vLLM's prefill launch: ndt)
  int32_t noncausal_width = 0;     // > 0: DSpark draft non-causal rows of this width (their row
                                   //   stride); 0: causal rows of stride `window`
  const int64_t* slot_mapping = nullptr;  // [>= token_offset + num_tokens] < 0 marks an invalid
                                          //   token (vLLM's is_valid_token); nullptr: every
                                          //   token t < qsl[R] is valid (required non-null for
                                          //   non-causal rows)
};

// vLLM's get_dspark_swa_index_width (compressor_utils.py): ceil((W + K) / 64) * 64.
DS_HD_INLINE int32_t SwaNoncausalWidth(int32_t window, int32_t spec_k) {
  return CeilDiv(MaxI(window, 0) + MaxI(spec_k, 0), 64) * 64;
}

inline SwaParams MakeSwaParams(const BatchSizes& s, const DeviceBatch& d, const ModelConsts& m,
                               const int32_t* token_to_req, int32_t* swa_lens, int32_t* swa_indices) {
  SwaParams p{d.query_start_loc, d.seq_lens, d.block_table, token_to_req, swa_lens, swa_indices,
              s.num_reqs, s.num_tokens, s.bt_stride, m.swa_window, m.swa_block_size};
  p.slot_mapping = d.slot_mapping;  // is_valid_token.copy_(slot_mapping >= 0)
  return p;
}

inline absl::Status CanImplementSwa(const SwaParams& p) {
  if (p.query_start_loc == nullptr || p.seq_lens == nullptr || p.block_table == nullptr ||
      p.swa_lens == nullptr || p.swa_indices == nullptr)
    return absl::InvalidArgumentError(
        "SwaParams: query_start_loc, seq_lens, block_table, swa_lens and swa_indices must be non-null");
  if (p.num_reqs < 0 || p.num_tokens < 0)
    return absl::InvalidArgumentError(
        absl::StrFormat("SwaParams: num_reqs=%d and num_tokens=%d must be >= 0", p.num_reqs, p.num_tokens));
  if (p.window < 1 || p.block_size < 1)
    return absl::InvalidArgumentError(
        absl::StrFormat("SwaParams: window=%d and block_size=%d must be >= 1", p.window, p.block_size));
  if (p.bt_stride < 0)
    return absl::InvalidArgumentError(absl::StrFormat("SwaParams: bt_stride=%d must be >= 0", p.bt_stride));
  if (p.noncausal_width < 0 || (p.noncausal_width > 0 && p.slot_mapping == nullptr))
    return absl::InvalidArgumentError(absl::StrFormat(
        "SwaParams: noncausal_width=%d must be >= 0, and non-causal rows need slot_mapping", p.noncausal_width));
  return absl::OkStatus();
}

// One token row's window, resolved from device metadata.
struct SwaRow {
  int32_t start;          // [tokens] first position in the window
  int32_t len;            // [tokens] window length; 0 for padding tokens
  const int32_t* bt_row;  // [bt_stride] block-table row of the owning request; unread when len == 0
};

// Resolves row t. `qsl` is the boundaries to read (shared or global, see QslView).
// The row of a padding token or of one whose slot is -1: no window, length 0.
DS_HD_INLINE SwaRow SwaInvalidRow(const SwaParams& p) { return SwaRow{0, 0, p.block_table}; }

DS_HD_INLINE SwaRow SwaResolveRow(const SwaParams& p, const int32_t* qsl, int32_t t) {
  if (t >= qsl[p.num_reqs]) return SwaInvalidRow(p);
  if (p.slot_mapping != nullptr && p.slot_mapping[t] < 0) return SwaInvalidRow(p);  // !is_valid
  if (p.noncausal_width > 0) {
    const int32_t r = RequestOfToken(p.token_to_req, qsl, p.num_reqs, t);
    const int32_t seq_len = p.seq_lens[r];
    const int32_t start = MaxI(seq_len - (qsl[r + 1] - qsl[r]) - p.window, 0);
    return SwaRow{start, MaxI(seq_len - start, 0), p.block_table + static_cast<int64_t>(r) * p.bt_stride};
  }
  const int32_t r = RequestOfToken(p.token_to_req, qsl, p.num_reqs, t);
  const int32_t pos = TokenPosition(qsl, p.seq_lens, r, t);
  const int32_t start = MaxI(pos - p.window + 1, 0);
  return SwaRow{start, MaxI(pos - start + 1, 0), p.block_table + static_cast<int64_t>(r) * p.bt_stride};
}

// Writes the cells of row t that `lane` of `num_lanes` owns (columns lane, lane + num_lanes, ...);
// lane 0 also writes swa_lens[t]. Lanes of a GPU row take a cell each; a lone lane (the CPU path)
// walks the window block by block. tests/kernels/test_cpu_paths_lone.cc: byte-identical.
DS_HD_INLINE void SwaWriteRow(const SwaParams& p, int32_t t, const SwaRow& row, int32_t lane,
                              int32_t num_lanes) {
  const int32_t width = p.noncausal_width > 0 ? p.noncausal_width : p.window;
  const int32_t bs = p.block_size;
  int32_t* out = p.swa_indices + static_cast<int64_t>(t) * width;
  int32_t j = lane;
  if (num_lanes > 1) {
    // A GPU lane owns one cell of a row, or two: one load and one division per cell. The walk
    // below would spend more divisions than it saves, in code a cold launch must fetch.
    DS_NO_UNROLL
    for (; j < width; j += num_lanes) {
      int32_t slot = -1;
      if (j < row.len) {
        const int32_t pos = row.start + j;
        slot = row.bt_row[pos / bs] * bs + pos % bs;
      }
      out[j] = slot;
    }
  } else {
    // One lane owns the whole row (the CPU path): the window is walked block by block, one
    // block-table load and one division per block (slot = block * bs + offset).
    const int32_t len = MinI(row.len, width);
    if (j < len) {
      const int32_t first = row.start + j;
      int32_t blk = first / bs;
      int32_t off = first - blk * bs;  // [0, bs)
      while (j < len) {
        const int32_t n = MinI(bs - off, len - j);
        const int32_t base = row.bt_row[blk] * bs + off;
        for (int32_t i = 0; i < n; ++i) out[j + i] = base + i;
        j += n;
        off = 0;
        ++blk;
      }
    }
    for (; j < width; ++j) out[j] = -1;
  }
  if (lane == 0) p.swa_lens[t] = row.len;
}

struct SwaKernel {
  static constexpr int32_t kThreads = 256;
  static constexpr int32_t kLanesPerRow = 32;
  static constexpr int32_t kRowsPerBlock = 16;
  static constexpr int kPhases = 2;
  using Shared = QslShared;
  SwaParams p;

  static LaunchShape Shape(const SwaParams& p) { return {CeilDiv(p.num_tokens, kRowsPerBlock), kThreads}; }

  DS_HD void Phase(int phase, const ThreadCtx& c, Shared& s) const {
    if (phase == 0) {
      LoadSharedQsl(p.query_start_loc, p.token_to_req, p.num_reqs, c, s);
      return;
    }
    const int32_t* qsl = QslView(p.query_start_loc, p.token_to_req, p.num_reqs, s);
    const int32_t lane = c.thread % kLanesPerRow;
    for (int32_t row = c.thread / kLanesPerRow; row < kRowsPerBlock; row += kThreads / kLanesPerRow) {
      const int32_t t = p.token_offset + c.block * kRowsPerBlock + row;
      if (t >= p.token_offset + p.num_tokens) return;
      SwaWriteRow(p, t, SwaResolveRow(p, qsl, t), lane, kLanesPerRow);
    }
  }

  // CPU path: each row resolved once and written by one lane of one (every column, and the
  // length), reading the global boundaries (the shared copy holds the same values).
  void CpuRun(LaunchShape shape) const {
    const int32_t rows = MinI(shape.grid * kRowsPerBlock, p.num_tokens);
    for (int32_t t = p.token_offset; t < p.token_offset + rows; ++t)
      SwaWriteRow(p, t, SwaResolveRow(p, p.query_start_loc, t), 0, 1);
  }
};

// vLLM's ComputePrefillMetadataKernel (SWA builder): the KV gather length of each prefill
// request, q + min(prefix, W - 1) with prefix = seq_len - q (no clamp of a negative prefix).
DS_HD_INLINE int32_t SwaPrefillGatherLen(int32_t q, int32_t seq_len, int32_t window) {
  return q + MinI(seq_len - q, window - 1);
}

struct SwaPrefillMetadataKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  const int32_t* query_start_loc;  // [num_decodes + num_prefills + 1] device boundaries
  const int32_t* seq_lens;         // [num_decodes + num_prefills]
  int32_t* gather_lens;            // [num_prefills]
  int32_t num_decodes;             // [requests] before the first prefill
  int32_t num_prefills;            // [requests]
  int32_t window;                  // W [tokens]

  LaunchShape Shape() const { return {CeilDiv(num_prefills, 128), 128}; }
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t i = c.block * c.block_dim + c.thread;
    if (i >= num_prefills) return;
    const int32_t r = num_decodes + i;
    const int32_t q = query_start_loc[r + 1] - query_start_loc[r];
    gather_lens[i] = SwaPrefillGatherLen(q, seq_lens[r], window);
  }
};

#if defined(__CUDACC__)
inline cudaError_t LaunchSwa(const SwaParams& p, cudaStream_t stream) {
  return LaunchFunctor(SwaKernel{p}, SwaKernel::Shape(p), stream);
}
#endif

inline void EmulateSwa(const SwaParams& p) { EmulateGrid(SwaKernel{p}, SwaKernel::Shape(p)); }

}  // namespace dspark
