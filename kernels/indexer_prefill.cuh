// Indexer kernels that vLLM's indexer builder launches besides the decode metadata, in states
// (c) and (d) alike (VLLM_CODE_MAP.md s.2.5-2.6):
//
//   PrefillChunkMetadataKernel  vLLM's BuildPrefillChunkMetadataKernel (indexer.py), one
//       program per request of the chunk. For request b with query [qs, qe) of the chunk's
//       relative boundaries, compressed range [cu[b], cu[b+1]) and start_pos = seq[b] - q_b:
//         ks[i - slice_start] = cu[b]
//         ke[i - slice_start] = cu[b] + (start_pos + 1 + (i - qs)) / ratio
//       for every i in [qs, qe) inside [slice_start, slice_stop), and
//         token_to_seq[cu[b] + k] = b  for k < cu[b+1] - cu[b]
//       (rows past token_to_seq_len dropped: the suite keeps a bounded scratch copy).
//   SchedulerMetadataKernel  a stand-in of DeepGEMM's get_paged_mqa_logits_metadata (one launch
//       returning [num_sms + 1, 2] int32), of its shape: it splits the decode rows' KV blocks
//       (ceil(len / 64) per row) evenly over num_sms and writes each SM's first (row, block).
//       DeepGEMM's own split is not reproduced (its source is not in the index); no output of
//       it is compared.
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
      p.ke[i - p.slice_start] = row_start + (start_pos + 1 + (i - qs)) / p.ratio;
    }
    for (int32_t k = c.thread; k < rows; k += kThreads)
      if (row_start + k < p.token_to_seq_len) p.token_to_seq[row_start + k] = b;
  }
};

struct SchedulerMetadataParams {
  const int32_t* context_lens;  // [rows] per-row KV length (DeepGEMM's 2-D context_lens, one column)
  int32_t* out;                 // [num_sms + 1, 2] (first row, first block) of each SM's share
  int32_t rows;                 // [rows]
  int32_t num_sms;              // [SMs] 132 on an H200
};

struct SchedulerMetadataKernel {
  static constexpr int32_t kBlockKv = 64;  // [tokens] KV per scheduled block
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  SchedulerMetadataParams p;

  static LaunchShape Shape(const SchedulerMetadataParams&) { return {1, 32}; }

  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    if (c.thread != 0) return;
    int64_t total = 0;
    for (int32_t r = 0; r < p.rows; ++r) total += CeilDiv(MaxI(p.context_lens[r], 0), kBlockKv);
    int32_t row = 0;
    int64_t before = 0;  // [blocks] in rows < row
    for (int32_t sm = 0; sm <= p.num_sms; ++sm) {
      const int64_t first = total * sm / p.num_sms;
      while (row < p.rows && before + CeilDiv(MaxI(p.context_lens[row], 0), kBlockKv) <= first && first < total) {
        before += CeilDiv(MaxI(p.context_lens[row], 0), kBlockKv);
        ++row;
      }
      p.out[2 * sm] = first < total ? row : p.rows;
      p.out[2 * sm + 1] = first < total ? static_cast<int32_t>(first - before) : 0;
    }
  }
};

}  // namespace dspark
