// CPU truth for the indexer's prefill metadata of a whole step (docs/design.md s.3 "Indexer prefill
// metadata", docs/states.md s.2.6), written from vLLM's semantics, not from the suite's ops:
// DeepseekV32IndexerMetadataBuilder.build's prefill branch (indexer.py, read_file id
// 61702236028) plans the chunks with split_indexer_prefill_chunks and builds each kept one with
// build_prefill_chunk_metadata (ref::IndexerPrefillChunk, kernels/reference/indexer_prefill.h).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/batch.h"

namespace dspark::ref {

// One request group of the plan and its query slice, as split_indexer_prefill_chunks returns
// them: requests [req_begin, req_end) counted from the first prefill request, query tokens
// [query_begin, query_end) counted from the group's first query token.
struct PrefillChunkSpec {
  int32_t req_begin = 0, req_end = 0, query_begin = 0, query_end = 0;
  bool operator==(const PrefillChunkSpec& o) const {
    return req_begin == o.req_begin && req_end == o.req_end && query_begin == o.query_begin &&
           query_end == o.query_end;
  }
};

// split_indexer_prefill_chunks(seq_lens_cpu, query_lens_cpu, workspace_size, max_logits_bytes):
// requests join a group while the summed KV rows N stay <= `workspace` and M x N <= `max_logits`
// (the elements, max_logits_bytes // 4); a request that fits nowhere forms a group alone. Each
// group's M query tokens are cut into slices of max(1, max_logits // N) (max(1, M) when N is 0).
std::vector<PrefillChunkSpec> SplitPrefillChunks(const std::vector<int64_t>& kv_rows,
                                                 const std::vector<int64_t>& query_lens, int64_t workspace,
                                                 int64_t max_logits);

// Every kept chunk's device outputs, concatenated in plan order (a chunk whose compressed rows
// sum to 0 is dropped, as build_prefill_chunk_metadata returns None for it).
struct IndexerPrefillChunks {
  std::vector<int32_t> cu_seq_lens;   // each chunk's [n + 1]
  std::vector<int32_t> token_to_seq;  // each chunk's [total], the first max_rows rows
  std::vector<int32_t> ks, ke;        // each chunk's [query slice length]
  int32_t chunks = 0;                 // chunks kept
};

// The step's prefill requests [num_decodes, num_reqs) of the DEVICE view at compress `ratio`
// (1 or 2): the plan from seq_lens // ratio and the query lengths (vLLM plans from the host
// upper bound, exact for prefill rows), then every chunk's metadata.
// token_to_seq keeps the concatenation's first `max_rows` rows.
IndexerPrefillChunks IndexerPrefillStep(const BatchSizes& sizes, const DeviceBatch& device, int32_t ratio,
                                        const ModelConsts& consts, int64_t max_rows);

}  // namespace dspark::ref
