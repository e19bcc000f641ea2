// CPU truth for the indexer decode metadata (varlen path), written from docs/design.md section 3,
// not from the kernel. It is computed from whichever boundaries it is given; the simulator
// and the tests give it the device truth.
#pragma once

#include <cstdint>
#include <vector>

namespace dspark::ref {

struct IndexerDecodeOut {
  std::vector<int32_t> seq_out;      // [capacity] causal length per token, 0 for padding and tail
  std::vector<int32_t> bt_rows;      // [num_decode_tokens, bt_width] dense, row-major
  std::vector<int32_t> decode_lens;  // [num_decode_tokens] all 1
  std::vector<int32_t> indices;      // [num_decode_tokens] request id; padding: fake ids
  std::vector<int32_t> per_req;      // [num_decodes] query length per request
};

// `qsl` [num_decodes + 1] with qsl[0] == 0 and non-decreasing; `seq_lens` [num_decodes];
// `block_table` [num_decodes, bt_stride]. Tokens are t < num_decode_tokens; the real ones are
// t < qsl[num_decodes]. Requires capacity >= num_decode_tokens.
IndexerDecodeOut IndexerDecode(const int32_t* qsl, const int32_t* seq_lens, const int32_t* block_table,
                               int32_t bt_stride, int32_t bt_width, int32_t num_decodes,
                               int32_t num_decode_tokens, int32_t capacity);

}  // namespace dspark::ref
