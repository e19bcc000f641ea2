// DeepseekV32IndexerMetadataBuilder.build (vLLM's indexer.py, upstream 61702236028 for (c),
// the fork's _build_body 69592609117 for (d)), SM100 varlen path, op for op. Included from
// kernels/suite/vllm_ops.h. Ratio k + 1 writes s.out.indexer[k].
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace dspark::vllm_ops {

// The decode rows' per-token lengths as the ratio-k builder hands them out (ratio 2: divided).
struct IndexerDecodeView {
  const int32_t* seq_lens = nullptr;  // [ndt]
};

// ratio 2, before the decode path: get_compressed_slot_mapping(num_tokens, qsl, seq_lens,
// block_table, num_states, 2, out=...): out.fill_(-1) [f] + kernel [k], into the persistent
// output (compared: indexer_r2.compressed_slots); then compressed_seq_lens = seq_lens // 2 [k]
// (compared with prefills: indexer_r2.compressed_seq_lens). `released_d` follows
// DeepseekV32IndexerMetadataBuilder.build of 0.31.0-0.34.0
// (vllm/v1/attention/backends/mla/indexer.py): compressed_seq_lens only under
// `if num_prefills > 0`. Otherwise (the seed's Before, <= 0.30.0) the divide runs every step.
// Not followed yet: 0.31.0+ also passes slot_mapping here (PAD in, PAD out), which differs from
// the older signature only on a real token whose slot_mapping is -1 (CaseOptions'
// unstored_token_every; no run produces one); the suite's one reference for this field is the
// older signature's, so (c) and (d) share it.
// Returns the device compressed lengths [R] (read by the prefill chunks).
template <class Backend>
absl::StatusOr<const int32_t*> IndexerRatio2Setup(Backend& be, const SuiteStep& s, bool released_d) {
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  int64_t* slots = s.out.indexer_r2_slots;
  int32_t* csl = s.out.indexer_r2_csl;
  CompressedSlotParams c = MakeCompressedSlotParams(z, in.device, s.consts, 2, nullptr, slots);
  c.ignore_slot_mapping = 1;
  FillI64MinusOneOverwritten(be, slots, z.capacity, c);
  DS_RETURN_IF_ERROR(CanImplementCompressedSlots(c));
  if (CompressedSlotKernel::Shape(c).grid > 0) be.Launch(CompressedSlotKernel{c}, CompressedSlotKernel::Shape(c));
  if (!released_d || z.num_decodes < z.num_reqs)
    Issue(be, Vec(V(in.device.seq_lens), S(2), csl, z.num_reqs, ops::BinaryOp::kFloorDiv));
  return static_cast<const int32_t*>(csl);
}

// (c) the old varlen chain: _build_varlen_decode_indices and the varlen branch of
// _prepare_decode_tensors. Lengths come from the DEVICE (diff(qsl)); only the total
// A = decode_lens_cpu.sum() comes from the host. 26 launches, + 3 with graph padding.
// `per_req_copy` false: 0.28.0 / 0.29.0, which have no per_req_decode_lens_buffer (25 launches).
template <class Backend>
absl::Status IndexerDecodeChain(Backend& be, const SuiteStep& s, const IndexerOutputs& o, bool per_req_copy = true) {
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  const int32_t nd = z.num_decodes, ndt = z.num_decode_tokens, W = z.bt_width, C = z.capacity;
  const int32_t* qsl = in.device.query_start_loc;
  const int32_t A = in.host.query_start_loc[nd] - in.host.query_start_loc[0];  // int(decode_lens_cpu.sum())
  be.NoteHostArrayOp();  // decode_lens_cpu = torch.diff(qsl_cpu[:nd + 1]), .sum(), .max(), .min()
  using ops::BinaryOp;
  const size_t a1 = static_cast<size_t>(MaxI(A, 1)), pad1 = static_cast<size_t>(MaxI(ndt - A, 1));
  int32_t* idx_tmp = be.template Scratch<int32_t>(a1);
  int32_t* pad_ids = be.template Scratch<int32_t>(pad1);
  int32_t* off = be.template Scratch<int32_t>(static_cast<size_t>(MaxI(nd, 1)));
  int32_t* eoff = be.template Scratch<int32_t>(a1);
  int32_t* rows = be.template Scratch<int32_t>(a1 * static_cast<size_t>(MaxI(W, 1)));
  DS_RETURN_IF_ERROR(be.status());
  // torch.diff(qsl[:nd + 1], out=decode_lens_buffer[:nd]); per_req_decode_lens[:nd].copy_(...)
  Issue(be, ops::DiffKernel{qsl, o.decode_lens, nd});
  if (per_req_copy) CopyD2D(be, o.per_req, o.decode_lens, nd);
  // _build_varlen_decode_indices: indices[:A] = repeat_interleave(arange[:nd], decode_lens, A)
  if (A > 0) {
    DS_ASSIGN_OR_RETURN(const int32_t* index, RepeatInterleaveIndex(be, o.decode_lens, nd, A));
    IndexSelect(be, s.arange, nd, index, idx_tmp, A);
    CopyD2D(be, o.indices, idx_tmp, A);
  }
  if (A < ndt) {  // indices[A:ndt] = num_decodes + arange[:pad]
    Issue(be, ops::AddScalarKernel{s.arange, pad_ids, ndt - A, nd});
    CopyD2D(be, o.indices + A, pad_ids, ndt - A);
  }
  // expanded_offsets = repeat_interleave(seq_lens - decode_lens - qsl, decode_lens, A)
  Issue(be, Vec(V(in.device.seq_lens), V(o.decode_lens), off, nd, BinaryOp::kSub));
  Issue(be, Vec(V(off), V(qsl), off, nd, BinaryOp::kSub));
  if (A > 0) {
    DS_ASSIGN_OR_RETURN(const int32_t* index, RepeatInterleaveIndex(be, o.decode_lens, nd, A));
    IndexSelect(be, off, nd, index, eoff, A);
    // decode_seq_lens_buffer[:A] = expanded_offsets + arange[:A] + 1
    Issue(be, Vec(V(eoff), V(s.arange), eoff, A, BinaryOp::kAdd));
    Issue(be, ops::AddScalarKernel{eoff, eoff, A, 1});
    CopyD2D(be, o.seq_out, eoff, A);
  }
  FillI32(be, o.seq_out + A, 0, C - A);  // decode_seq_lens_buffer[A:] = 0
  // expanded_block_table_buffer[:A] = repeat_interleave(block_table, decode_lens, dim=0, A)
  if (A > 0 && W > 0) {
    DS_ASSIGN_OR_RETURN(const int32_t* index, RepeatInterleaveIndex(be, o.decode_lens, nd, A));
    IndexSelectRows(be, in.device.block_table, nd, z.bt_stride, index, rows, W, A, W);
    Issue(be, ops::Copy2DKernel{rows, W, o.bt_out, s.layout.bt_out_stride, A, W});
  }
  if (A < ndt && W > 0)  // expanded_block_table_buffer[A:ndt, 0] = 0: column 0 only
    Issue(be, ops::FillStridedKernel{o.bt_out + static_cast<int64_t>(A) * s.layout.bt_out_stride,
                                     s.layout.bt_out_stride, ndt - A, 0});
  FillI32(be, o.decode_lens, 1, ndt);  // decode_lens_buffer[:ndt] = 1
  return be.status();
}

// State (c)'s chain on one indexer's buffers (IndexerArgs, as `microbench` and the kernel tests
// hold them): an all-decode batch of num_decodes requests and N_d tokens.
template <class Backend>
absl::Status IndexerDecodeChain(Backend& be, const IndexerArgs& a) {
  DS_RETURN_IF_ERROR(ValidateIndexerArgs(a, /*reads_host=*/true));
  BatchInputs in;
  in.sizes.num_reqs = a.num_decodes;
  in.sizes.num_tokens = a.num_decode_tokens;
  in.sizes.num_decodes = a.num_decodes;
  in.sizes.num_decode_tokens = a.num_decode_tokens;
  in.sizes.capacity = a.capacity;
  in.sizes.bt_width = a.bt_width;
  in.sizes.bt_stride = a.bt_stride;
  in.device.query_start_loc = a.query_start_loc;
  in.device.seq_lens = a.seq_lens;
  in.device.block_table = a.block_table;
  in.host.query_start_loc = a.host_query_start_loc;
  SuiteStep s;
  s.in = &in;
  s.layout.bt_out_stride = a.out_stride;
  s.arange = a.arange;
  return IndexerDecodeChain(be, s, IndexerOutputs{a.seq_out, a.bt_out, a.decode_lens, a.indices, a.per_req});
}

// (d) #56562: _indexer_decode_metadata_kernel, one launch, the device total.
template <class Backend>
absl::Status IndexerDecodeFused(Backend& be, const SuiteStep& s, const IndexerOutputs& o) {
  const IndexerDecodeParams p = ToIndexerDecodeParams(suite_internal::SuiteIndexerArgs(s, o));
  DS_RETURN_IF_ERROR(CanImplementIndexerDecode(p));
  const LaunchShape shape = IndexerDecodeKernel::Shape(p);
  if (shape.grid > 0) be.Launch(IndexerDecodeKernel::Make(p), shape);
  return be.status();
}

// Ratio 2 after the decode path: in place (max_decode_len > 1 on the host, or (d)), seq_lens //= 2 on the
// expanded lengths [k]; otherwise expanded_seq_lens_buffer[:nd] = seq_lens // 2 [k][c] and
// expanded_seq_lens_buffer[nd:ndt] = 0 [f]. Either way the handed-out [0, ndt) is seq // 2.
// `dsl` holds the ratio-1 lengths; `esl` receives the q == 1 result (the output buffer).
template <class Backend>
absl::Status IndexerRatio2Divide(Backend& be, const SuiteStep& s, int32_t* dsl, int32_t* esl, bool in_place) {
  const BatchSizes& z = s.in->sizes;
  const int32_t nd = z.num_decodes, ndt = z.num_decode_tokens;
  if (in_place) {
    Issue(be, Vec(V(dsl), S(2), dsl, ndt, ops::BinaryOp::kFloorDiv));
    return be.status();
  }
  const int32_t n = MinI(nd, ndt);  // torch needs nd == ndt here; with q <= 1 the rest is 0
  int32_t* tmp = be.template Scratch<int32_t>(static_cast<size_t>(MaxI(n, 1)));
  DS_RETURN_IF_ERROR(be.status());
  Issue(be, Vec(V(dsl), S(2), tmp, n, ops::BinaryOp::kFloorDiv));
  CopyD2D(be, esl, tmp, n);
  FillI32(be, esl + n, 0, ndt - n);
  return be.status();
}

// get_paged_mqa_logits_metadata(seq_lens, num_states, num_sms, indices=decode_indices) [k]
// (DeepGEMM's varlen scheduler, kernels/paged_mqa_schedule.cuh) and schedule_metadata[:] =
// metadata [c] (DeepseekV32IndexerMetadataBuilder.build, the end of its decode branch).
template <class Backend>
absl::Status IndexerSchedule(Backend& be, const int32_t* seq_lens, const int32_t* indices, int32_t rows) {
  const size_t cells = 2 * static_cast<size_t>(kNumSms + 1);
  int32_t* metadata = be.template Scratch<int32_t>(cells);
  int32_t* schedule = be.template Scratch<int32_t>(cells);
  int32_t* work = be.template Scratch<int32_t>(2 * static_cast<size_t>(MaxI(rows, 1)));
  DS_RETURN_IF_ERROR(be.status());
  const PagedMqaScheduleParams p{seq_lens, indices, work, metadata, rows, kNumSms};
  be.Launch(PagedMqaScheduleKernel{p}, PagedMqaScheduleKernel::Shape(p));
  CopyD2D(be, schedule, metadata, static_cast<int64_t>(cells));
  return be.status();
}

// split_indexer_prefill_chunks (host): greedy request chunks under the KV-row workspace and the
// logits budget, then query slices of max(1, max_logits // N). Returns (request begin, request
// end, query slice begin, query slice end), requests relative to the first prefill. Each group is
// NextPrefillGroup's (kernels/indexer_prefill.cuh), the step fused-suite runs on the device.
inline std::vector<std::pair<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>>> SplitIndexerPrefillChunks(
    const std::vector<int64_t>& seq_lens, const std::vector<int64_t>& query_lens,
    int64_t workspace = kIndexerPrefillWorkspace, int64_t max_logits = kIndexerMaxLogits) {
  std::vector<std::pair<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>>> chunks;
  const int32_t n = static_cast<int32_t>(seq_lens.size());
  const PrefillSizeArrays sizes{seq_lens.data(), query_lens.data()};
  for (int32_t start = 0; start < n;) {
    const PrefillGroup g = NextPrefillGroup(sizes, start, n, workspace, max_logits);
    const int64_t max_q = PrefillSliceLen(g, max_logits);
    for (int64_t q = 0; q < g.m; q += max_q)
      chunks.push_back({{start, g.end}, {static_cast<int32_t>(q), static_cast<int32_t>(std::min(q + max_q, g.m))}});
    start = g.end;
  }
  return chunks;
}

// The prefill path (the same in (c) and (d)): host chunking from the host seq_lens bound and
// qsl_cpu, then per chunk build_prefill_chunk_metadata: total = compressed_seq_lens_cpu.sum()
// (host; a chunk with 0 is skipped), cu[:1] = 0 [f], cumsum(out=cu[1:]) [k][k],
// qsl[s:e+1] - qsl[s] [k], BuildPrefillChunkMetadataKernel [k]. vLLM allocates each chunk's
// token_to_seq, cu_seq_lens and cu_seqlen_ks / ke with torch.empty; here they are the persistent
// prefill fields of `o`, chunk after chunk (token_to_seq's rows past layout.prefill_rows dropped).
template <class Backend>
absl::Status IndexerPrefill(Backend& be, const SuiteStep& s, const IndexerOutputs& o, int32_t ratio,
                            const int32_t* csl) {
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  const int32_t nd = z.num_decodes, np = z.num_reqs - z.num_decodes;
  if (np <= 0) return be.status();
  const int32_t* hq = in.host.query_start_loc;
  std::vector<int64_t> host_csl(static_cast<size_t>(np)), host_q(static_cast<size_t>(np));
  for (int32_t i = 0; i < np; ++i) {
    host_csl[i] = in.host.seq_lens[nd + i] / ratio;
    host_q[i] = hq[nd + i + 1] - hq[nd + i];
  }
  be.NoteHostArrayOp();
  int64_t cu_at = 0, rows_at = 0, query_at = 0;  // where the next chunk's tensors go
  for (const auto& [reqs, slice] :
       SplitIndexerPrefillChunks(host_csl, host_q, s.consts.indexer_prefill_workspace, s.consts.indexer_max_logits)) {
    int64_t total = 0;
    for (int32_t i = reqs.first; i < reqs.second; ++i) total += host_csl[i];
    if (total == 0) continue;
    const int32_t b = nd + reqs.first, n = reqs.second - reqs.first, q = slice.second - slice.first;
    if (cu_at + n + 1 > s.layout.prefill_cu_len || query_at + q > s.layout.token_capacity)
      return absl::OutOfRangeError(absl::StrFormat(
          "indexer prefill chunks: %d cu_seq_lens entries / %d query rows exceed the layout's %d / %d",
          cu_at + n + 1, query_at + q, s.layout.prefill_cu_len, s.layout.token_capacity));
    const int64_t kept = std::max<int64_t>(std::min<int64_t>(total, s.layout.prefill_rows - rows_at), 0);
    int32_t* token_to_seq = o.prefill_token_to_seq + std::min<int64_t>(rows_at, s.layout.prefill_rows);
    int32_t* cu = o.prefill_cu_seq_lens + cu_at;
    int32_t* ks = o.prefill_ks + query_at;
    int32_t* ke = o.prefill_ke + query_at;
    cu_at += n + 1;
    rows_at += total;
    query_at += q;
    int32_t* tiles = be.template Scratch<int32_t>(1);
    int32_t* rel = be.template Scratch<int32_t>(static_cast<size_t>(n) + 1);
    DS_RETURN_IF_ERROR(be.status());
    FillI32(be, cu, 0, 1);
    Issue(be, ops::ScanTileInitKernel{tiles, 1});
    Issue(be, ops::InclusiveScanKernel{csl + b, cu + 1, n});
    Issue(be, ops::Binary2DKernel{ops::View2D::Column(in.device.query_start_loc + b),
                                  ops::View2D{in.device.query_start_loc + b, 0, 0, 0}, rel, n + 1, 1,
                                  ops::BinaryOp::kSub});
    const PrefillChunkMetadataParams p{rel, in.device.seq_lens + b, cu, token_to_seq, ks, ke, n,
                                       slice.first, slice.second, ratio, kept};
    be.Launch(PrefillChunkMetadataKernel{p}, PrefillChunkMetadataKernel::Shape(p));
  }
  return be.status();
}

template <class Backend>
absl::Status IndexerBuildOps(Backend& be, const SuiteStep& s, int k, bool fused) {
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  const IndexerOutputs& o = s.out.indexer[k];
  const int32_t ratio = k + 1;
  const int32_t* csl = in.device.seq_lens;
  if (ratio == 2) {
    DS_ASSIGN_OR_RETURN(csl, IndexerRatio2Setup(be, s, /*released_d=*/fused));
  }
  DS_RETURN_IF_ERROR(IndexerPrefill(be, s, o, ratio, csl));
  const int32_t nd = z.num_decodes, ndt = z.num_decode_tokens;
  if (nd == 0) return be.status();
  int32_t max_decode_len = 0;  // decode_lens_cpu.max().item(): the host split, may be stale
  be.NoteHostArrayOp();
  for (int32_t r = 0; r < nd; ++r)
    max_decode_len = MaxI(max_decode_len, in.host.query_start_loc[r + 1] - in.host.query_start_loc[r]);
  // (c), ratio 2, q == 1: seq_lens_is_buffer_view is false, so it hands out
  // expanded_seq_lens_buffer and the ratio-1 lengths go to scratch. (d)'s kernel always writes
  // the buffer, which is divided in place (docs/states.md s.2.5: ratio 2 = 7 launches).
  const bool esl_path = !fused && ratio == 2 && max_decode_len <= 1;
  IndexerOutputs work = o;
  if (esl_path) {
    work.seq_out = be.template Scratch<int32_t>(static_cast<size_t>(MaxI(z.capacity, 1)));
    DS_RETURN_IF_ERROR(be.status());
  }
  DS_RETURN_IF_ERROR(fused ? IndexerDecodeFused(be, s, work) : IndexerDecodeChain(be, s, work));
  if (ratio == 2) DS_RETURN_IF_ERROR(IndexerRatio2Divide(be, s, work.seq_out, o.seq_out, !esl_path));
  return IndexerSchedule(be, o.seq_out, o.indices, ndt);
}

// One indexer builder of ratio k + 1 in state (c) (`fused` false) or (d) (`fused` true),
// deduplicated across implementations in the CPU check (kernels/suite/builder_memo.h).
template <class Backend>
absl::Status IndexerBuild(Backend& be, const SuiteStep& s, int k, bool fused) {
  return suite_internal::Memoized(be, s, k == 0 ? BuilderGroup::kIndexerR1 : BuilderGroup::kIndexerR2, fused ? 1 : 0,
                                  nullptr, [&](const SuiteStep& x) { return IndexerBuildOps(be, x, k, fused); });
}

}  // namespace dspark::vllm_ops
