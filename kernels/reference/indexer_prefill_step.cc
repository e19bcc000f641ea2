#include "kernels/reference/indexer_prefill_step.h"

#include <algorithm>
#include <cstddef>

#include "kernels/reference/indexer_prefill.h"

namespace dspark::ref {

std::vector<PrefillChunkSpec> SplitPrefillChunks(const std::vector<int64_t>& kv_rows,
                                                 const std::vector<int64_t>& query_lens, int64_t workspace,
                                                 int64_t max_logits) {
  std::vector<PrefillChunkSpec> plan;
  const size_t n = kv_rows.size();
  size_t next = 0;
  while (next < n) {
    const size_t first = next;
    int64_t m = 0, rows = 0;  // the group's query tokens and KV rows
    for (; next < n; ++next) {
      const int64_t m2 = m + query_lens[next], rows2 = rows + kv_rows[next];
      if (rows2 > workspace || m2 * rows2 > max_logits) break;
      m = m2;
      rows = rows2;
    }
    if (next == first) {  // over budget alone: a group of its own
      m = query_lens[first];
      rows = kv_rows[first];
      ++next;
    }
    const int64_t slice = rows > 0 ? std::max<int64_t>(1, max_logits / rows) : std::max<int64_t>(1, m);
    for (int64_t q = 0; q < m; q += slice)
      plan.push_back({static_cast<int32_t>(first), static_cast<int32_t>(next), static_cast<int32_t>(q),
                      static_cast<int32_t>(std::min(m, q + slice))});
  }
  return plan;
}

IndexerPrefillChunks IndexerPrefillStep(const BatchSizes& sizes, const DeviceBatch& device, int32_t ratio,
                                        const ModelConsts& consts, int64_t max_rows) {
  IndexerPrefillChunks out;
  const int32_t nd = sizes.num_decodes, np = sizes.num_reqs - sizes.num_decodes;
  if (np <= 0) return out;
  std::vector<int32_t> qlens(static_cast<size_t>(np)), seq_lens(static_cast<size_t>(np));
  std::vector<int64_t> kv_rows(static_cast<size_t>(np)), query_lens(static_cast<size_t>(np));
  for (int32_t i = 0; i < np; ++i) {
    const int32_t r = nd + i;
    qlens[i] = device.query_start_loc[r + 1] - device.query_start_loc[r];
    seq_lens[i] = device.seq_lens[r];
    kv_rows[i] = seq_lens[i] / ratio;
    query_lens[i] = qlens[i];
  }
  for (const PrefillChunkSpec& c :
       SplitPrefillChunks(kv_rows, query_lens, consts.indexer_prefill_workspace, consts.indexer_max_logits)) {
    int64_t total = 0;
    for (int32_t i = c.req_begin; i < c.req_end; ++i) total += kv_rows[i];
    if (total == 0) continue;
    const PrefillChunk chunk = IndexerPrefillChunk(
        std::vector<int32_t>(qlens.begin() + c.req_begin, qlens.begin() + c.req_end),
        std::vector<int32_t>(seq_lens.begin() + c.req_begin, seq_lens.begin() + c.req_end), ratio, c.query_begin,
        c.query_end, std::max<int64_t>(max_rows - static_cast<int64_t>(out.token_to_seq.size()), 0));
    out.cu_seq_lens.insert(out.cu_seq_lens.end(), chunk.cu_seq_lens.begin(), chunk.cu_seq_lens.end());
    out.token_to_seq.insert(out.token_to_seq.end(), chunk.token_to_seq.begin(), chunk.token_to_seq.end());
    out.ks.insert(out.ks.end(), chunk.ks.begin(), chunk.ks.end());
    out.ke.insert(out.ke.end(), chunk.ke.begin(), chunk.ke.end());
    ++out.chunks;
  }
  return out;
}

}  // namespace dspark::ref
