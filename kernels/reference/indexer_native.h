// CPU truth for the indexer's native decode path of vLLM's states (a) and (b) (0.20.0-0.27.1,
// DeepseekV32IndexerMetadataBuilder.build on SM100, before the varlen chain existed), written from
// the semantics of that builder (docs/states.md s.3), not from the suite's ops.
//
// The split: split_decodes_and_prefills(cm, decode_threshold = 1 + K, require_uniform = True).
//   - max query length <= threshold and threshold <= 1: every request is a decode;
//   - the first request longer than the threshold: no decode;
//   - every query length equal to the first one or 0: every request is a decode (the tokens too,
//     graph padding included);
//   - else the decodes are the requests before the first whose length differs from the first's.
// The decode rows (use_native: the largest decode length L <= next_n = 1 + K, always on SM100):
//   decode_lens[r] = q_r for r < nd (the device diff of query_start_loc)
//   next_n > 1: seq_lens [nd, L], row r, column j: (seq[r] - L + 1 + j) // ratio (Python's floor)
//   next_n = 1: seq_lens [ndt]: seq[r] // ratio for r < nd, 0 up to ndt
// The block table handed out is the runner's own first nd rows: no output of the builder.
#pragma once

#include <cstdint>
#include <vector>

namespace dspark::ref {

struct UniformDecodeSplit {
  int32_t num_decodes = 0;
  int32_t num_decode_tokens = 0;
};

// `qsl` [num_reqs + 1]; `num_tokens` the padded N (num_actual_tokens).
UniformDecodeSplit SplitUniformDecodes(const int32_t* qsl, int32_t num_reqs, int32_t num_tokens, int32_t threshold);

struct IndexerNativeDecode {
  UniformDecodeSplit split;
  int32_t max_decode_len = 0;        // L, the largest decode query length
  std::vector<int32_t> decode_lens;  // [nd] per request
  std::vector<int32_t> seq_lens;     // [nd * L] (next_n > 1) or [ndt] (next_n == 1), compressed
};

IndexerNativeDecode IndexerNativeDecodeRef(const int32_t* qsl, const int32_t* seq_lens, int32_t num_reqs,
                                           int32_t num_tokens, int32_t next_n, int32_t ratio);

}  // namespace dspark::ref
