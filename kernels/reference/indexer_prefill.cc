#include "kernels/reference/indexer_prefill.h"

#include <cstddef>

namespace dspark::ref {

PrefillChunk IndexerPrefillChunk(const std::vector<int32_t>& qlens, const std::vector<int32_t>& seq_lens,
                                 int32_t ratio, int32_t slice_start, int32_t slice_stop, int64_t max_rows) {
  PrefillChunk out;
  out.cu_seq_lens.push_back(0);
  int32_t query = 0;  // chunk-relative index of the request's first query token
  for (std::size_t b = 0; b < qlens.size(); ++b) {
    const int32_t rows = seq_lens[b] / ratio;
    const int32_t first_row = out.cu_seq_lens.back();
    for (int32_t k = 0; k < rows && static_cast<int64_t>(out.token_to_seq.size()) < max_rows; ++k)
      out.token_to_seq.push_back(static_cast<int32_t>(b));
    out.cu_seq_lens.push_back(first_row + rows);
    for (int32_t i = 0; i < qlens[b]; ++i) {
      const int32_t token = query + i;
      if (token < slice_start || token >= slice_stop) continue;
      const int32_t position = seq_lens[b] - qlens[b] + i;
      out.ks.push_back(first_row);
      out.ke.push_back(first_row + (position + 1) / ratio);
    }
    query += qlens[b];
  }
  return out;
}

}  // namespace dspark::ref
