#include "kernels/suite/regions.h"

#include <algorithm>

namespace dspark {
namespace {

SuiteRegion I32(const char* builder, const char* field, int64_t rows, const int32_t* want,
                int32_t* SuiteOutputs::*got) {
  SuiteRegion r;
  r.builder = builder;
  r.field = field;
  r.rows = rows;
  r.want32 = want;
  r.got32 = got;
  return r;
}

SuiteRegion I64(const char* builder, const char* field, int64_t rows, const int64_t* want,
                int64_t* SuiteOutputs::*got) {
  SuiteRegion r;
  r.builder = builder;
  r.field = field;
  r.int64_field = true;
  r.rows = rows;
  r.want64 = want;
  r.got64 = got;
  return r;
}

SuiteRegion Indexer(const char* builder, const char* field, int k, int64_t rows, const int32_t* want,
                    int32_t* IndexerOutputs::*got) {
  SuiteRegion r;
  r.builder = builder;
  r.field = field;
  r.rows = rows;
  r.want32 = want;
  r.k = k;
  r.got_indexer = got;
  return r;
}

// A per-capacity field: the reference stores `given` cells, the rest up to the capacity are `tail`.
SuiteRegion WithTail(SuiteRegion r, size_t given, int64_t tail) {
  r.want_cells = static_cast<int64_t>(given);
  r.tail = tail;
  return r;
}

// DeepSeek-V4's builders after token_map and swa (kernels/suite/suite.h lists the fields).
void AppendV4Regions(const SuiteReference& ref, const BatchInputs& in, const SuiteLayout& layout,
                     std::vector<SuiteRegion>* out) {
  const BatchSizes& z = in.sizes;
  const int64_t N = z.num_tokens, C = z.capacity, nd = z.num_decodes, n_d = z.num_decode_tokens;
  out->push_back(WithTail(I64("mla_c4", "compressed_slots", C, ref.mla_c4_slots.data(), &SuiteOutputs::mla_r2_slots),
                          ref.mla_c4_slots.size(), -1));
  out->push_back(WithTail(
      I64("mla_c128", "compressed_slots", C, ref.mla_c128_slots.data(), &SuiteOutputs::mla_r1_slots),
      ref.mla_c128_slots.size(), -1));
  const int64_t w = ref.c128a.width;
  if (n_d > 0) {
    SuiteRegion d = I32("mla_c128", "c128a_decode_indices", n_d, ref.c128a.decode_indices.data(),
                        &SuiteOutputs::c128a_decode);
    d.cols = w;
    d.got_stride = layout.c128a_stride;
    d.matrix = true;
    out->push_back(d);
    out->push_back(I32("mla_c128", "c128a_decode_lens", n_d, ref.c128a.decode_lens.data(),
                       &SuiteOutputs::c128a_decode_lens));
  }
  if (N > n_d) {
    SuiteRegion p = I32("mla_c128", "c128a_prefill_indices", N - n_d, ref.c128a.prefill_indices.data(),
                        &SuiteOutputs::c128a_prefill);
    p.cols = w;
    p.got_stride = layout.c128a_stride;
    p.matrix = true;
    p.prefill_metadata = true;
    out->push_back(p);
  }
  const char* b = "indexer_c4";
  const int k = 1;
  using Path = SuiteRegion::IndexerPath;
  const auto on = [](SuiteRegion r, Path p) {
    r.indexer_path = p;
    return r;
  };
  if (nd > 0) {  // the varlen chain (c): per-token rows on the step's split
    out->push_back(on(Indexer(b, "seq_out", k, n_d, ref.indexer_r2_seq_out.data(), &IndexerOutputs::seq_out),
                      Path::kPerToken));
    SuiteRegion bt = Indexer(b, "bt_out", k, n_d, ref.indexer.bt_rows.data(), &IndexerOutputs::bt_out);
    bt.cols = z.bt_width;
    bt.got_stride = layout.bt_out_stride;
    bt.matrix = true;
    bt.padding_rows_from = in.device.query_start_loc[z.num_decodes];
    out->push_back(on(bt, Path::kPerToken));
    out->push_back(on(Indexer(b, "decode_lens", k, n_d, ref.indexer.decode_lens.data(), &IndexerOutputs::decode_lens),
                      Path::kPerToken));
    out->push_back(
        on(Indexer(b, "indices", k, n_d, ref.indexer.indices.data(), &IndexerOutputs::indices), Path::kPerToken));
  }
  // The native path (a), (b): per-request lengths and [nd, L] compressed lengths on the
  // indexer's own uniform split; the block table it hands out is the runner's (no output).
  const ref::IndexerNativeDecode& nat = ref.indexer_native;
  if (nat.split.num_decodes > 0) {
    out->push_back(on(Indexer(b, "seq_out", k, static_cast<int64_t>(nat.seq_lens.size()), nat.seq_lens.data(),
                              &IndexerOutputs::seq_out),
                      Path::kNative));
    out->push_back(on(Indexer(b, "decode_lens", k, nat.split.num_decodes, nat.decode_lens.data(),
                              &IndexerOutputs::decode_lens),
                      Path::kNative));
  }
  const auto add_prefill = [&](const ref::IndexerPrefillChunks& c, Path p) {
    const auto add = [&](const char* field, const std::vector<int32_t>& want, int32_t* IndexerOutputs::*got) {
      SuiteRegion r = Indexer(b, field, k, static_cast<int64_t>(want.size()), want.data(), got);
      r.prefill_metadata = true;
      out->push_back(on(r, p));
    };
    add("prefill_cu_seq_lens", c.cu_seq_lens, &IndexerOutputs::prefill_cu_seq_lens);
    add("prefill_token_to_seq", c.token_to_seq, &IndexerOutputs::prefill_token_to_seq);
    add("prefill_ks", c.ks, &IndexerOutputs::prefill_ks);
    add("prefill_ke", c.ke, &IndexerOutputs::prefill_ke);
  };
  if (!ref.prefill_native_own) {  // one split for both paths
    if (z.num_decodes < z.num_reqs) add_prefill(ref.prefill[k], Path::kAny);
  } else {
    if (z.num_decodes < z.num_reqs) add_prefill(ref.prefill[k], Path::kPerToken);
    if (nat.split.num_decodes < z.num_reqs) add_prefill(ref.prefill_native, Path::kNative);
  }
  out->push_back(WithTail(
      I64(b, "compressed_slots", C, ref.indexer_r2_slots.data(), &SuiteOutputs::indexer_r2_slots),
      ref.indexer_r2_slots.size(), -1));
  if (z.num_decodes < z.num_reqs)
    out->push_back(I32(b, "compressed_seq_lens", z.num_reqs, ref.indexer_r2_csl.data(), &SuiteOutputs::indexer_r2_csl));
}

}  // namespace

std::vector<SuiteRegion> SuiteRegions(const SuiteReference& ref, const BatchInputs& in, const SuiteLayout& layout,
                                      const ModelConsts& consts) {
  const BatchSizes& z = in.sizes;
  const int64_t N = z.num_tokens, C = z.capacity, W = consts.swa_window;
  const int64_t nd = z.num_decodes, n_d = z.num_decode_tokens;
  std::vector<SuiteRegion> out;
  out.reserve(48);  // every field of either model: one allocation per step, no regrowth
  out.push_back(I32("token_map", "token_to_req", N, ref.token_to_req.data(), &SuiteOutputs::token_to_req));
  out.push_back(I32("swa", "swa_lens", N, ref.swa.lens.data(), &SuiteOutputs::swa_lens));
  {
    // The DSpark draft step (causal false) hands out its decode rows from the non-causal buffer;
    // the causal buffer holds the prefill rows [N_d, N) only.
    const int64_t first = in.causal ? 0 : std::min(n_d, N);
    SuiteRegion r = I32("swa", "swa_indices", N - first, ref.swa.indices.data() + first * W, &SuiteOutputs::swa_indices);
    r.cols = W;
    r.got_stride = W;
    r.got_offset = first * W;
    r.matrix = true;
    out.push_back(r);
    if (!in.causal) {
      const int64_t width = layout.noncausal_width;
      SuiteRegion nc = I32("swa", "swa_indices_noncausal", n_d, ref.swa_noncausal_indices.data(),
                           &SuiteOutputs::swa_indices_noncausal);
      nc.cols = width;
      nc.got_stride = width;
      nc.matrix = true;
      out.push_back(nc);
    }
  }
  // _build_deepseek_v4_metadata runs ComputePrefillMetadataKernel only with prefills.
  if (z.num_decodes < z.num_reqs) {
    SuiteRegion g = I32("swa", "prefill_gather_lens", z.num_reqs - z.num_decodes, ref.swa_gather_lens.data(),
                        &SuiteOutputs::swa_gather_lens);
    g.prefill_metadata = true;
    out.push_back(g);
  }
  if (consts.model == ModelKind::kV4) {
    AppendV4Regions(ref, in, layout, &out);
    return out;
  }
  // MLA ratio 1 has no output of its own in vLLM (it hands out slot_mapping and the token map).
  out.push_back(WithTail(I64("mla_r2", "compressed_slots", C, ref.mla_r2_slots.data(), &SuiteOutputs::mla_r2_slots),
                         ref.mla_r2_slots.size(), -1));
  out.push_back(WithTail(I64("mla_r2", "ring_slots", C, ref.ring_slots.data(), &SuiteOutputs::ring_slots),
                         ref.ring_slots.size(), -1));
  // With no decode request the decode metadata is absent (vLLM builds it under
  // `if num_decodes > 0`); with no token at all too (0.32.0+ return before the split when
  // num_tokens == 0; older releases would hand out zero-length decode rows, which no step reads).
  for (int k = 0; k < 2 && nd > 0 && N > 0; ++k) {
    const char* b = k == 0 ? "indexer_r1" : "indexer_r2";
    // Ratio 2 hands out [0, N_d) of its compressed lengths, seq // 2 (vLLM's `seq_lens //= ratio`
    // or expanded_seq_lens_buffer); ratio 1 its whole buffer, zero from N_d.
    out.push_back(k == 0 ? WithTail(Indexer(b, "seq_out", k, C, ref.indexer.seq_out.data(), &IndexerOutputs::seq_out),
                                    ref.indexer.seq_out.size(), 0)
                         : Indexer(b, "seq_out", k, n_d, ref.indexer_r2_seq_out.data(), &IndexerOutputs::seq_out));
    SuiteRegion bt = Indexer(b, "bt_out", k, n_d, ref.indexer.bt_rows.data(), &IndexerOutputs::bt_out);
    bt.cols = z.bt_width;
    bt.got_stride = layout.bt_out_stride;
    bt.matrix = true;
    bt.padding_rows_from = in.device.query_start_loc[z.num_decodes];
    out.push_back(bt);
    out.push_back(Indexer(b, "decode_lens", k, n_d, ref.indexer.decode_lens.data(), &IndexerOutputs::decode_lens));
    out.push_back(Indexer(b, "indices", k, n_d, ref.indexer.indices.data(), &IndexerOutputs::indices));
    out.push_back(Indexer(b, "per_req", k, nd, ref.indexer.per_req.data(), &IndexerOutputs::per_req));
  }
  // The prefill chunks (vLLM builds them under `if num_prefills > 0`), concatenated.
  for (int k = 0; k < 2 && z.num_decodes < z.num_reqs; ++k) {
    const char* b = k == 0 ? "indexer_r1" : "indexer_r2";
    const ref::IndexerPrefillChunks& c = ref.prefill[k];
    const auto add = [&](const char* field, const std::vector<int32_t>& want, int32_t* IndexerOutputs::*got) {
      SuiteRegion r = Indexer(b, field, k, static_cast<int64_t>(want.size()), want.data(), got);
      r.prefill_metadata = true;
      out.push_back(r);
    };
    add("prefill_cu_seq_lens", c.cu_seq_lens, &IndexerOutputs::prefill_cu_seq_lens);
    add("prefill_token_to_seq", c.token_to_seq, &IndexerOutputs::prefill_token_to_seq);
    add("prefill_ks", c.ks, &IndexerOutputs::prefill_ks);
    add("prefill_ke", c.ke, &IndexerOutputs::prefill_ke);
  }
  // The indexer's ratio-2 compressed slots, built in every step before the decode / prefill split;
  // its compressed_seq_lens only with prefills (the prefill chunks read it; vLLM 0.31.0+ computes
  // it only under `if num_prefills > 0`).
  out.push_back(WithTail(
      I64("indexer_r2", "compressed_slots", C, ref.indexer_r2_slots.data(), &SuiteOutputs::indexer_r2_slots),
      ref.indexer_r2_slots.size(), -1));
  if (z.num_decodes < z.num_reqs)
    out.push_back(I32("indexer_r2", "compressed_seq_lens", z.num_reqs, ref.indexer_r2_csl.data(),
                      &SuiteOutputs::indexer_r2_csl));
  if (z.num_decodes < z.num_reqs) {  // with no prefills the segment fields are absent (#57207)
    const auto seg = [&](SuiteRegion r) {
      r.prefill_segments = true;
      out.push_back(r);
    };
    seg(I32("prefill_segments", "seg_qsl", int64_t{layout.max_segments} + 1, ref.segments.seg_qsl.data(),
            &SuiteOutputs::seg_qsl));
    seg(I32("prefill_segments", "seg_seq_lens", layout.max_segments, ref.segments.seg_seq_lens.data(),
            &SuiteOutputs::seg_seq_lens));
    seg(I32("prefill_segments", "seg_count", 1, ref.seg_count.data(), &SuiteOutputs::seg_count));
    SuiteRegion max_q = I32("prefill_segments", "seg_max_query_len", 1, ref.seg_max_query_len.data(),
                            &SuiteOutputs::seg_count);
    max_q.got_offset = 1;  // seg_count's buffer holds {count, max query len}
    seg(max_q);
  }
  return out;
}

}  // namespace dspark
