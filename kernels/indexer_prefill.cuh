// Indexer kernels that vLLM's indexer builder launches besides the decode metadata, in states
// (c) and (d) alike (docs/states.md s.2.5-2.6):
//
//   PrefillChunkMetadataKernel  vLLM's BuildPrefillChunkMetadataKernel (indexer.py), one
//       program per request of the chunk. For request b with query [qs, qe) of the chunk's
//       relative boundaries, compressed range [cu[b], cu[b+1]) and start_pos = seq[b] - q_b:
//         ks[i - slice_start] = cu[b]
//         ke[i - slice_start] = cu[b] + (start_pos + 1 + (i - qs)) / ratio
//       for every i in [qs, qe) inside [slice_start, slice_stop), and
//         token_to_seq[cu[b] + k] = b  for k < cu[b+1] - cu[b]
//       (rows past token_to_seq_len dropped: the suite keeps a bounded scratch copy).
//
//   NextPrefillGroup / PrefillSliceLen  one step of vLLM's split_indexer_prefill_chunks (host in
//       vLLM, indexer.py): the next greedy request group and its query slice length. (a)-(d) run
//       it on the host (vllm_ops::SplitIndexerPrefillChunks); fused-suite on the device, from
//       the device view (kernels/suite/fused_suite_prefill.cuh).
//
// DeepGEMM's scheduler metadata, launched at the end of the decode build, is
// kernels/paged_mqa_schedule.cuh.
#pragma once

#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

namespace dspark {

struct PrefillChunkMetadataParams {
  const int32_t* query_start_loc;  // [num_reqs + 1] the chunk's boundaries, relative (qsl[0] = 0)
  const int32_t* seq_lens;         // [num_reqs] uncompressed context incl. the query
  const int32_t* cu_seq_lens;      // [num_reqs + 1] exclusive prefix sum of compressed lengths
  int32_t* token_to_seq;           // [cu_seq_lens[num_reqs]] request of each compressed KV row
  int32_t* ks;                     // [slice_stop - slice_start] row start per query token
  int32_t* ke;                     // [slice_stop - slice_start] row end per query token
  int32_t num_reqs;                // [requests] of the chunk
  int32_t slice_start;             // [tokens] query slice of the chunk, relative
  int32_t slice_stop;              // [tokens]
  int32_t ratio;                   // [positions per compressed entry] 1 or 2
  int64_t token_to_seq_len;        // [rows] of token_to_seq kept; rows past it are not written
};

// ke of query offset `offset` of a request whose compressed rows start at `row_start` and whose
// first query token sits at position `start_pos` (seq_len - q): the rows it sees end at
// row_start + (position + 1) // ratio. ks is row_start.
DS_HD_INLINE int32_t PrefillChunkKe(int32_t row_start, int32_t start_pos, int32_t offset, int32_t ratio) {
  return row_start + (start_pos + 1 + offset) / ratio;
}

// One request group of split_indexer_prefill_chunks (it ends before request `end`): its query
// tokens m and KV rows.
struct PrefillGroup {
  int32_t end;
  int64_t m, rows;
};

// The group starting at request `first` of `n`: requests join while the summed KV rows stay
// <= workspace and m x rows <= max_logits (elements); a request that fits nowhere forms a group
// alone. `sizes` gives Rows(i) (seq_len // ratio, the csl) and Query(i) of request i.
template <class Sizes>
DS_HD PrefillGroup NextPrefillGroup(const Sizes& sizes, int32_t first, int32_t n, int64_t workspace,
                                    int64_t max_logits) {
  PrefillGroup g{first, 0, 0};
  DS_NO_UNROLL
  for (; g.end < n; ++g.end) {
    const int64_t m2 = g.m + sizes.Query(g.end), rows2 = g.rows + sizes.Rows(g.end);
    if (rows2 > workspace || m2 * rows2 > max_logits) break;
    g.m = m2;
    g.rows = rows2;
  }
  if (g.end == first) {  // over budget alone
    g.m = sizes.Query(first);
    g.rows = sizes.Rows(first);
    ++g.end;
  }
  return g;
}

// The group's query slice length: max(1, max_logits // rows), or max(1, m) with no KV rows.
DS_HD_INLINE int64_t PrefillSliceLen(const PrefillGroup& g, int64_t max_logits) {
  const int64_t slice = g.rows > 0 ? max_logits / g.rows : g.m;
  return slice > 1 ? slice : 1;
}

// Request sizes from arrays already formed (the host plan of (a)-(d): host csl and query lengths).
struct PrefillSizeArrays {
  const int64_t* rows;   // [n] csl
  const int64_t* query;  // [n]
  DS_HD int64_t Rows(int32_t i) const { return rows[i]; }
  DS_HD int64_t Query(int32_t i) const { return query[i]; }
};

struct PrefillChunkMetadataKernel {
  static constexpr int32_t kThreads = 128;
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  PrefillChunkMetadataParams p;

  static LaunchShape Shape(const PrefillChunkMetadataParams& p) { return {p.num_reqs, kThreads}; }

  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const int32_t b = c.block;
    const int32_t qs = p.query_start_loc[b], qe = p.query_start_loc[b + 1];
    const int32_t row_start = p.cu_seq_lens[b], rows = p.cu_seq_lens[b + 1] - row_start;
    const int32_t start_pos = p.seq_lens[b] - (qe - qs);
    for (int32_t i = qs + c.thread; i < qe; i += kThreads) {
      if (i < p.slice_start || i >= p.slice_stop) continue;
      p.ks[i - p.slice_start] = row_start;
      p.ke[i - p.slice_start] = PrefillChunkKe(row_start, start_pos, i - qs, p.ratio);
    }
    for (int32_t k = c.thread; k < rows; k += kThreads)
      if (row_start + k < p.token_to_seq_len) p.token_to_seq[row_start + k] = b;
  }
};

}  // namespace dspark
