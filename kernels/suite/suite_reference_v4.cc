// DeepSeek-V4's references past SWA (kernels/suite/suite.h lists the fields): the ratio-4 and
// ratio-128 compressed slots, C128A's top-k metadata and the ratio-4 indexer, composed from the
// independent references in kernels/reference/ on the DEVICE view.
#include <algorithm>

#include "kernels/reference/c128a.h"
#include "kernels/reference/compressed_slots.h"
#include "kernels/reference/indexer_native.h"
#include "kernels/reference/indexer_prefill_step.h"
#include "kernels/suite/regions.h"

namespace dspark {

void FillSuiteReferenceV4(const BatchInputs& in, const SuiteLayout& layout, const ModelConsts& consts,
                          SuiteReference* r) {
  const BatchSizes& z = in.sizes;
  const DeviceBatch& d = in.device;
  const int32_t bs = consts.mla_block_size;
  BatchSizes mapped = z;
  mapped.capacity = std::clamp(*std::max_element(d.query_start_loc, d.query_start_loc + z.num_reqs + 1), 0,
                               z.capacity);
  // get_compressed_slot_mapping's signature of <= 0.30.0 (no slot_mapping) in both MLA groups
  // and the indexer: a token with no KV slot still gets its compressed slot.
  r->mla_c4_slots = ref::CompressedSlots(mapped, d, MlaRatio(consts, 0), bs, /*read_slot_mapping=*/false);
  r->mla_c128_slots = ref::CompressedSlots(mapped, d, MlaRatio(consts, 1), bs, /*read_slot_mapping=*/false);
  // C128A's width from the host's longest sequence (CommonAttentionMetadata.max_seq_len).
  const int32_t* host_seq = in.host.seq_lens != nullptr ? in.host.seq_lens : d.seq_lens;
  int64_t max_seq = 0;
  for (int32_t i = 0; i < z.num_reqs; ++i) max_seq = std::max<int64_t>(max_seq, host_seq[i]);
  r->c128a = ref::C128aTopkRef(z, d, C128aWidth(consts, max_seq), bs, MlaRatio(consts, 1));
  // The one indexer (ratio 4), in the second indexer's fields.
  const int32_t ratio = IndexerRatio(consts, 1);
  r->indexer = ref::IndexerDecode(d.query_start_loc, d.seq_lens, d.block_table, z.bt_stride, z.bt_width, z.num_decodes,
                                  z.num_decode_tokens, z.num_decode_tokens);
  r->prefill[1] = ref::IndexerPrefillStep(z, d, ratio, consts, layout.prefill_rows);
  r->indexer_r2_seq_out.resize(static_cast<size_t>(std::max(z.num_decode_tokens, 0)));
  for (size_t t = 0; t < r->indexer_r2_seq_out.size(); ++t) r->indexer_r2_seq_out[t] = r->indexer.seq_out[t] / ratio;
  r->indexer_r2_slots = ref::CompressedSlots(mapped, d, ratio, bs, /*read_slot_mapping=*/false);
  r->indexer_r2_csl.resize(static_cast<size_t>(std::max(z.num_reqs, 0)));
  for (size_t i = 0; i < r->indexer_r2_csl.size(); ++i) r->indexer_r2_csl[i] = d.seq_lens[i] / ratio;
  // States (a) and (b): the native decode path on the indexer's own uniform split, and the
  // prefill chunks of that split where it differs from the step's.
  r->indexer_native = ref::IndexerNativeDecodeRef(d.query_start_loc, d.seq_lens, z.num_reqs, z.num_tokens,
                                                  1 + consts.spec_k, ratio);
  const ref::UniformDecodeSplit& u = r->indexer_native.split;
  r->prefill_native_own = u.num_decodes != z.num_decodes;
  if (r->prefill_native_own) {
    BatchSizes split = z;
    split.num_decodes = u.num_decodes;
    split.num_decode_tokens = u.num_decode_tokens;
    r->prefill_native = ref::IndexerPrefillStep(split, d, ratio, consts, layout.prefill_rows);
  }
}

}  // namespace dspark
