// Indexer decode metadata (varlen path) on one indexer's buffers (IndexerArgs), written once over
// a Backend (kernels/common/backend.h) so the same code runs emulated on the CPU and on a GPU:
//
//   IndexerFused  PR #56562: one IndexerDecodeKernel launch (kernels/indexer_decode.cuh).
//
// State (c)'s chain on the same arguments is vllm_ops::IndexerDecodeChain(be, IndexerArgs)
// (kernels/suite/vllm_indexer_ops.h), vLLM's _build_varlen_decode_indices: per-request lengths
// from the device, only the total from the host. (An earlier chain here took the split from the
// host too; vLLM's does not, and its test test_varlen_indexer_indices_use_device_lengths says so.)
//
// All five outputs are persistent buffers of `capacity` entries (bt_out: capacity rows).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/common/backend.h"
#include "kernels/common/status_macros.h"
#include "kernels/indexer_decode.cuh"
#include "kernels/ops.cuh"

namespace dspark {

struct IndexerArgs {
  // Device view (truth).
  const int32_t* query_start_loc = nullptr;  // [num_decodes + 1] device boundaries, qsl[0] == 0
  const int32_t* seq_lens = nullptr;         // [num_decodes] context incl. the current query
  const int32_t* block_table = nullptr;      // [num_decodes, bt_stride] block ids
  // Host view: right total, possibly stale per-request split. (c)'s chain reads the total only.
  const int32_t* host_query_start_loc = nullptr;  // [num_decodes + 1]
  // Persistent 0, 1, ..., capacity - 1 built once at start-up (vLLM's arange_buffer); (c) only.
  const int32_t* arange = nullptr;  // [capacity]

  int32_t num_decodes = 0;        // [requests]
  int32_t num_decode_tokens = 0;  // N_d [tokens], padded
  int32_t capacity = 0;           // [tokens] length of every output buffer, >= max(N_d, num_decodes)
  int32_t bt_width = 0;           // W [blocks] used columns of block_table
  int32_t bt_stride = 0;          // [int32] row stride of block_table, >= W
  int32_t out_stride = 0;         // [int32] row stride of bt_out, >= W

  // Outputs, written in place.
  int32_t* seq_out = nullptr;      // [capacity]
  int32_t* bt_out = nullptr;       // [capacity, out_stride]
  int32_t* decode_lens = nullptr;  // [capacity]
  int32_t* indices = nullptr;      // [capacity]
  int32_t* per_req = nullptr;      // [capacity]
};

inline IndexerDecodeParams ToIndexerDecodeParams(const IndexerArgs& a) {
  return IndexerDecodeParams{a.query_start_loc, a.seq_lens, a.block_table, a.seq_out, a.bt_out,
                             a.decode_lens, a.indices, a.per_req, a.num_decodes, a.num_decode_tokens,
                             a.capacity, a.bt_width, a.bt_stride, a.out_stride};
}

// Host-side checks. `reads_host` adds what IndexerChain needs: sane host boundaries whose
// total fits the padded token count, and the persistent arange buffer.
inline absl::Status ValidateIndexerArgs(const IndexerArgs& a, bool reads_host) {
  DS_RETURN_IF_ERROR(CanImplementIndexerDecode(ToIndexerDecodeParams(a)));
  if (a.capacity < a.num_decodes)
    return absl::OutOfRangeError(absl::StrFormat(
        "indexer: capacity=%d must be >= num_decodes=%d (per_req is a [capacity] buffer)", a.capacity,
        a.num_decodes));
  if (!reads_host) return absl::OkStatus();
  if (a.host_query_start_loc == nullptr)
    return absl::InvalidArgumentError("indexer chain: host_query_start_loc is null, expected [num_decodes + 1]");
  if (a.arange == nullptr && a.capacity > 0)
    return absl::InvalidArgumentError("indexer chain: arange is null, expected [capacity] = 0..capacity-1");
  const int32_t* hq = a.host_query_start_loc;
  if (hq[0] != 0)
    return absl::InvalidArgumentError(
        absl::StrFormat("indexer chain: host_query_start_loc[0]=%d, expected 0", hq[0]));
  for (int32_t r = 0; r < a.num_decodes; ++r)
    if (hq[r + 1] < hq[r])
      return absl::InvalidArgumentError(absl::StrFormat(
          "indexer chain: host_query_start_loc decreases at %d (%d -> %d), expected non-decreasing", r + 1,
          hq[r], hq[r + 1]));
  if (hq[a.num_decodes] > a.num_decode_tokens)
    return absl::OutOfRangeError(absl::StrFormat(
        "indexer chain: host decode token total %d exceeds num_decode_tokens=%d", hq[a.num_decodes],
        a.num_decode_tokens));
  return absl::OkStatus();
}

template <class Backend>
absl::Status IndexerFused(Backend& be, const IndexerArgs& a) {
  DS_RETURN_IF_ERROR(ValidateIndexerArgs(a, /*reads_host=*/false));
  const IndexerDecodeParams p = ToIndexerDecodeParams(a);
  const LaunchShape shape = IndexerDecodeKernel::Shape(p);
  if (shape.grid > 0) be.Launch(IndexerDecodeKernel::Make(p), shape);
  return be.status();
}

}  // namespace dspark
