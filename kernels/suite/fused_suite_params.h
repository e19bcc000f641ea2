// fused-suite's parameters (kernels/suite/fused_suite.cuh): the suite's inputs, outputs, sizes
// and grid partition in one compact struct, and the builders' parameter structs made from it.
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"
#include "kernels/compressed_slots.cuh"
#include "kernels/indexer_decode.cuh"
#include "kernels/prefill_segments.cuh"
#include "kernels/ring_slots.cuh"
#include "kernels/swa.cuh"

namespace dspark {

// The suite's inputs, outputs and sizes; the builders' parameter structs are made from these by
// the Suite*Params functions below, on the host (for the contracts) and in the kernel.
struct FusedSuiteParams {
  // Line 0: what phase 0 of every block reads.
  const int32_t* query_start_loc;  // [num_reqs + 1] device boundaries
  const int32_t* seq_lens;         // [num_reqs] device sequence lengths
  const int64_t* slot_mapping;     // [num_tokens] KV slot per token
  const int32_t* block_table;      // [num_reqs, bt_stride] block ids (every builder's)
  int32_t num_reqs;                // R [requests]
  int32_t num_tokens;              // N [tokens]
  int32_t num_decodes;             // nd [requests]
  int32_t num_decode_tokens;       // N_d [tokens]
  int32_t capacity;                // C [tokens] of the per-token buffers this step writes
  int32_t bt_width;                // W [blocks] used columns of block_table
  int32_t bt_stride;               // [int32] row stride of block_table
  int32_t out_stride;              // [int32] row stride of both bt_out buffers
  // Line 1: grid partition (PlanFusedSuiteGrid) and model constants.
  int32_t token_blocks;    // [blocks] CeilDiv(max(N, R), kTokensPerBlock)
  int32_t slot_chunks;     // [blocks per slot job] CeilDiv(N, kThreads)
  int32_t slot_blocks;     // [blocks] kSlotJobs * slot_chunks (MLA r1, MLA r2, ring, indexer r2)
  int32_t row_chunks;      // [blocks per decode token] CeilDiv(W, kRowChunk)
  int32_t row_blocks;      // [blocks] N_d * row_chunks
  int32_t tail_blocks;     // [blocks]
  int32_t seg_bound;       // [segments] segment entries block 0 writes (see file comment)
  int32_t max_segments;    // [segments] length of seg_seq_lens (seg_qsl has one more)
  int32_t window;          // [tokens] SWA window, the row stride of swa_indices
  int32_t swa_block_size;  // [tokens per block]
  int32_t mla_block_size;  // [tokens per block] uncompressed MLA block size
  int32_t ring_capacity;   // [slots per request] CompressorRingCapacity(K)
  int32_t segment_len;     // [tokens] FP8 prefill segment cap
  int32_t fp8;             // 1: FP8 segmentation; 0: BF16, one segment per prefill request
  int32_t swa_noncausal_width;  // > 0 (the DSpark draft step): decode rows are non-causal, this wide
  int32_t unused;
  // Lines 2-5: outputs.
  int32_t* token_to_req;    // [>= N] request per token, 0 for padding
  int32_t* swa_lens;        // [>= N]
  int32_t* swa_indices;     // [>= N, window]
  int32_t* swa_indices_nc;  // [>= N_d, swa_noncausal_width] the draft rows
  int64_t* mla_out[2];      // [C] ratio 1, ratio 2
  int64_t* ring_out;        // [C]
  int32_t* seg_qsl;         // [max_segments + 1]
  int32_t* seg_seq_lens;    // [max_segments]
  int32_t* seg_count;       // [2] count, then prefill_segment_max_query_len
  int32_t* seq_out[2];      // [C] per ratio
  int32_t* bt_out[2];       // [>= N_d, out_stride] per ratio
  int32_t* decode_lens[2];  // [>= N_d] per ratio
  int32_t* indices[2];      // [>= N_d] per ratio
  int32_t* per_req[2];      // [>= nd] per ratio
  int64_t* r2_slots;        // [C] the indexer's ratio-2 compressed slots
  int32_t* r2_csl;          // [>= R] the indexer's ratio-2 compressed_seq_lens
};

// The builders' views of the suite. `seq_lens` is where the caller reads sequence lengths from
// (the global array, or a block's shared copy).
DS_HD_INLINE SwaParams SuiteSwaParams(const FusedSuiteParams& p, const int32_t* seq_lens) {
  return SwaParams{p.query_start_loc, seq_lens,     p.block_table, nullptr,   p.swa_lens,      p.swa_indices,
                   p.num_reqs,        p.num_tokens, p.bt_stride,   p.window,  p.swa_block_size};
}
DS_HD_INLINE CompressedSlotParams SuiteMlaParams(const FusedSuiteParams& p, int32_t k, const int32_t* seq_lens) {
  return CompressedSlotParams{p.query_start_loc, seq_lens,   p.block_table, p.slot_mapping, nullptr,
                              p.mla_out[k],      p.num_reqs, p.capacity,    p.bt_stride,    k + 1,
                              p.mla_block_size};
}
DS_HD_INLINE RingSlotParams SuiteRingParams(const FusedSuiteParams& p, const int32_t* seq_lens) {
  return RingSlotParams{p.query_start_loc, seq_lens,   p.block_table, nullptr,     p.ring_out,
                        p.num_reqs,        p.capacity, p.bt_stride,   p.ring_capacity};
}
DS_HD_INLINE IndexerDecodeParams SuiteIndexerParams(const FusedSuiteParams& p, int32_t k, const int32_t* seq_lens) {
  // Ratio 2 (k = 1) writes its compressed lengths, seq // 2 (seq_shift 1), as vLLM's ratio-2 builder hands out.
  return IndexerDecodeParams{p.query_start_loc, seq_lens,          p.block_table, p.seq_out[k],  p.bt_out[k],
                             p.decode_lens[k],  p.indices[k],      p.per_req[k],  p.num_decodes, p.num_decode_tokens,
                             p.capacity,        p.bt_width,        p.bt_stride,   p.out_stride,  k};
}
DS_HD_INLINE PrefillSegmentParams SuiteSegmentParams(const FusedSuiteParams& p, int32_t max_segments) {
  return PrefillSegmentParams{p.query_start_loc, p.seq_lens,    p.seg_qsl,    p.seg_seq_lens,  p.seg_count,
                              p.num_reqs,        p.num_decodes, max_segments, p.segment_len, p.fp8 != 0,
                              p.seg_count + 1};
}

}  // namespace dspark
