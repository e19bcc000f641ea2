#include "kernels/reference/indexer_decode.h"

#include <cstddef>

namespace dspark::ref {

IndexerDecodeOut IndexerDecode(const int32_t* qsl, const int32_t* seq_lens, const int32_t* block_table,
                               int32_t bt_stride, int32_t bt_width, int32_t num_decodes,
                               int32_t num_decode_tokens, int32_t capacity) {
  IndexerDecodeOut o;
  // Zero everywhere first: padding rows, padding seq lens and the tail need nothing more.
  o.seq_out.assign(static_cast<size_t>(capacity), 0);
  o.bt_rows.assign(static_cast<size_t>(num_decode_tokens) * static_cast<size_t>(bt_width), 0);
  o.decode_lens.assign(static_cast<size_t>(num_decode_tokens), 1);
  o.indices.assign(static_cast<size_t>(num_decode_tokens), 0);
  o.per_req.assign(static_cast<size_t>(num_decodes), 0);

  // Walk the requests; request r owns tokens [qsl[r], qsl[r + 1]).
  for (int32_t r = 0; r < num_decodes; ++r) {
    const int32_t start = qsl[r];
    const int32_t qlen = qsl[r + 1] - qsl[r];
    o.per_req[r] = qlen;
    const int32_t context = seq_lens[r] - qlen;  // tokens before this step's query
    for (int32_t k = 0; k < qlen; ++k) {
      const int32_t t = start + k;
      if (t >= num_decode_tokens) break;
      o.seq_out[t] = context + k + 1;  // token k of the query sees the context and itself
      o.indices[t] = r;
      for (int32_t col = 0; col < bt_width; ++col)
        o.bt_rows[static_cast<size_t>(t) * bt_width + col] = block_table[static_cast<size_t>(r) * bt_stride + col];
    }
  }
  // Padding tokens get distinct fake request ids after the real ones.
  const int32_t actual = qsl[num_decodes];
  for (int32_t t = actual < 0 ? 0 : actual; t < num_decode_tokens; ++t) o.indices[t] = num_decodes + (t - actual);
  return o;
}

}  // namespace dspark::ref
