// Indexer decode metadata (varlen path) in two implementations, written once over a Backend
// (kernels/common/backend.h) so the same code runs emulated on the CPU and on a GPU:
//
//   IndexerChain  The pre-#56562 PyTorch path (vLLM's _build_varlen_decode_indices and the
//                 varlen branch of _prepare_decode_tensors), with the token total and the
//                 per-request split taken from the HOST:
//                   host:  decode_lens_cpu = diff(qsl_cpu[:nd+1]); actual = decode_lens_cpu.sum()
//                   [k] torch.diff(qsl[:nd+1], out=decode_lens[:nd])          (device lens)
//                   [c] per_req[:nd].copy_(decode_lens[:nd])
//                   [k][k] offsets = seq_lens - decode_lens - qsl[:nd]
//                   repeat_interleave #1, repeats from the host lens: np.repeat on the host,
//                     [h2d] pinned copy of the index, [k] index_select(offsets)
//                   [k][k] + arange[:actual] + 1;  [c] seq_out[:actual] = ...
//                   [f] seq_out[actual:capacity] = 0
//                   repeat_interleave #2 (block-table rows), repeats from the host lens:
//                     np.repeat on the host, [h2d], [k] index_select(block_table, dim=0),
//                     [k] strided copy into bt_out[:actual, :W]
//                   [k] bt_out[actual:N_d, 0] = 0          <- ONLY column 0 of padding rows
//                   [c] indices[:actual] = the first expansion's index
//                   [k] nd + arange[:pad]; [c] indices[actual:N_d] = ...
//                   [f] decode_lens[:N_d] = 1
//                 ([k] kernel, [c] device-to-device copy, [h2d] pinned copy, [f] fill.) An op
//                 with nothing to do (zero length) is not issued. Under stale host boundaries
//                 the two expansions assign tokens to the wrong requests (indices, seq_out and
//                 bt_out rows go wrong); per_req and decode_lens come from the device and stay
//                 right. Columns >= 1 of padding rows keep whatever an earlier step left there
//                 ("padding residue", DESIGN.md section 6).
//   IndexerFused  PR #56562: one IndexerDecodeKernel launch (kernels/indexer_decode.cuh).
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
  // Host view: right total, possibly stale per-request split. Read by IndexerChain only.
  const int32_t* host_query_start_loc = nullptr;  // [num_decodes + 1]
  // Persistent 0, 1, ..., capacity - 1 built once at start-up (vLLM's arange_buffer); chain only.
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

namespace internal {
// np.repeat(np.arange(num_reqs), np.diff(host_qsl)): the request of each host-counted token.
inline std::vector<int32_t> HostRepeatArange(const int32_t* host_qsl, int32_t num_reqs) {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(host_qsl[num_reqs]));
  for (int32_t r = 0; r < num_reqs; ++r)
    for (int32_t k = host_qsl[r]; k < host_qsl[r + 1]; ++k) out.push_back(r);
  return out;
}
}  // namespace internal

template <class Backend>
absl::Status IndexerChain(Backend& be, const IndexerArgs& a) {
  DS_RETURN_IF_ERROR(ValidateIndexerArgs(a, /*reads_host=*/true));
  const int32_t nd = a.num_decodes, n_d = a.num_decode_tokens, W = a.bt_width;
  // decode_lens_cpu = torch.diff(qsl_cpu[:nd+1]); actual = int(decode_lens_cpu.sum().item())
  const int32_t actual = a.host_query_start_loc[nd];
  be.NoteHostArrayOp();
  be.NoteHostArrayOp();

  int32_t* offsets = nullptr;
  if (nd > 0) {
    offsets = be.template Scratch<int32_t>(nd);
    DS_RETURN_IF_ERROR(be.status());
    const ops::DiffKernel k_diff{a.query_start_loc, a.decode_lens, nd};
    be.Launch(k_diff, k_diff.Shape());
    be.CopyDeviceToDevice(a.per_req, a.decode_lens, sizeof(int32_t) * nd);
    const ops::BinaryKernel k_sub_lens{a.seq_lens, a.decode_lens, offsets, nd, ops::BinaryOp::kSub};
    const ops::BinaryKernel k_sub_qsl{offsets, a.query_start_loc, offsets, nd, ops::BinaryOp::kSub};
    be.Launch(k_sub_lens, k_sub_lens.Shape());
    be.Launch(k_sub_qsl, k_sub_qsl.Shape());
  }

  // repeat_interleave #1: per-token offsets, expanded by the host's idea of the split.
  int32_t* token_req = nullptr;  // [actual] device copy of the host expansion index
  if (actual > 0) {
    const std::vector<int32_t> host_index = internal::HostRepeatArange(a.host_query_start_loc, nd);
    be.NoteHostArrayOp();
    token_req = be.template Scratch<int32_t>(actual);
    int32_t* expanded = be.template Scratch<int32_t>(actual);
    int32_t* with_arange = be.template Scratch<int32_t>(actual);
    DS_RETURN_IF_ERROR(be.status());
    be.CopyToDevice(token_req, host_index.data(), sizeof(int32_t) * actual);
    const ops::GatherKernel k_expand{offsets, nd, token_req, expanded, actual};
    const ops::BinaryKernel k_add_arange{expanded, a.arange, with_arange, actual, ops::BinaryOp::kAdd};
    const ops::AddScalarKernel k_add_one{with_arange, with_arange, actual, 1};
    be.Launch(k_expand, k_expand.Shape());
    be.Launch(k_add_arange, k_add_arange.Shape());
    be.Launch(k_add_one, k_add_one.Shape());
    be.CopyDeviceToDevice(a.seq_out, with_arange, sizeof(int32_t) * actual);
  }
  if (actual < a.capacity) be.Fill32(a.seq_out + actual, 0, static_cast<size_t>(a.capacity - actual));

  // repeat_interleave #2: block-table rows, again expanded by the host split.
  if (actual > 0 && W > 0) {
    const std::vector<int32_t> host_index = internal::HostRepeatArange(a.host_query_start_loc, nd);
    be.NoteHostArrayOp();
    int32_t* row_req = be.template Scratch<int32_t>(actual);
    int32_t* rows = be.template Scratch<int32_t>(static_cast<size_t>(actual) * W);
    DS_RETURN_IF_ERROR(be.status());
    be.CopyToDevice(row_req, host_index.data(), sizeof(int32_t) * actual);
    const ops::GatherRowsKernel k_rows{a.block_table, nd, a.bt_stride, row_req, rows, W, actual, W};
    const ops::Copy2DKernel k_copy{rows, W, a.bt_out, a.out_stride, actual, W};
    be.Launch(k_rows, k_rows.Shape());
    be.Launch(k_copy, k_copy.Shape());
  }
  if (actual < n_d && W > 0) {
    const ops::FillStridedKernel k_col0{a.bt_out + static_cast<int64_t>(actual) * a.out_stride, a.out_stride,
                                        n_d - actual, 0};
    be.Launch(k_col0, k_col0.Shape());
  }

  // _build_varlen_decode_indices: real tokens take the expansion, padding gets nd + arange.
  if (actual > 0) be.CopyDeviceToDevice(a.indices, token_req, sizeof(int32_t) * actual);
  if (actual < n_d) {
    const int32_t pad = n_d - actual;
    int32_t* fake_ids = be.template Scratch<int32_t>(pad);
    DS_RETURN_IF_ERROR(be.status());
    const ops::AddScalarKernel k_fake{a.arange, fake_ids, pad, nd};
    be.Launch(k_fake, k_fake.Shape());
    be.CopyDeviceToDevice(a.indices + actual, fake_ids, sizeof(int32_t) * pad);
  }
  // All rows now have decode_len 1 (overwrites the per-request lens the diff left there).
  if (n_d > 0) be.Fill32(a.decode_lens, 1, static_cast<size_t>(n_d));
  return be.status();
}

template <class Backend>
absl::Status IndexerFused(Backend& be, const IndexerArgs& a) {
  DS_RETURN_IF_ERROR(ValidateIndexerArgs(a, /*reads_host=*/false));
  const IndexerDecodeParams p = ToIndexerDecodeParams(a);
  const LaunchShape shape = IndexerDecodeKernel::Shape(p);
  if (shape.grid > 0) be.Launch(IndexerDecodeKernel{p}, shape);
  return be.status();
}

}  // namespace dspark
