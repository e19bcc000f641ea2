// CPU truth for the indexer's prefill chunk metadata (vLLM's build_prefill_chunk_metadata and
// BuildPrefillChunkMetadataKernel, docs/design.md s.3 "Indexer prefill metadata"), written from the
// semantics, not from kernels/indexer_prefill.cuh.
#pragma once

#include <cstdint>
#include <vector>

namespace dspark::ref {

struct PrefillChunk {
  std::vector<int32_t> cu_seq_lens;   // [n + 1] 0, then the running sum of seq_lens // ratio
  std::vector<int32_t> token_to_seq;  // [cu_seq_lens[n]] request (chunk-relative) of each KV row
  std::vector<int32_t> ks, ke;        // [slice_stop - slice_start] per query token of the slice
};

// One chunk of `n` prefill requests: `qlens` and `seq_lens` (context incl. the query) per
// request, `ratio` 1 or 2, the query slice [slice_start, slice_stop) counted from the chunk's
// first query token. A token at offset i of request b sits at position seq_b - q_b + i and sees
// the compressed rows [cu[b], cu[b] + (position + 1) // ratio).
// token_to_seq keeps its first `max_rows` rows (a step's check bounds what it compares).
PrefillChunk IndexerPrefillChunk(const std::vector<int32_t>& qlens, const std::vector<int32_t>& seq_lens,
                                 int32_t ratio, int32_t slice_start, int32_t slice_stop,
                                 int64_t max_rows = INT64_MAX);

}  // namespace dspark::ref
