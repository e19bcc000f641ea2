// DeepSeek-V4's builders in vLLM's states (a)-(c) (docs/states.md s.9), op for op, each written
// once over a Backend: the two compressed MLA groups (C4A, ratio 4; C128A, ratio 128, with its
// top-k metadata), the compressor (mapping + block-table clamp_, no ring) and the ratio-4
// indexer. [k] kernel, [c] copy, [f] fill, [h2d] host-to-device copy. An op with nothing to do is
// not issued. The token map and SWA are the shared ops of kernels/suite/vllm_ops.h.
//
// The KV-cache groups of DeepSeek-V4 and what each builds (vllm/models/deepseek_v4/): SWA (every
// layer's DeepseekV4SWACache), MLA C4A and MLA C128A (DeepseekV4SparseMLAMetadataBuilder,
// tokens_per_state 4 / 128), one CompressorMetadataBuilder per compressor state cache (the C4A
// and C128A attention compressors and the C4A indexer's compressor: three specs, three groups)
// and the indexer (DeepseekV32IndexerMetadataBuilder, ratio 4; only C4A layers have one). Up to
// 0.30.0 the runner gives each group its own CommonAttentionMetadata (`copy(cm_base)`), so every
// group whose builder reads `token_to_req_indices` builds the mapping again: six mappings a step.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/c128a.cuh"
#include "kernels/suite/vllm_ops.h"

namespace dspark::vllm_ops {

// The groups that map tokens, in the order the suite builds them.
inline constexpr int kV4MappingGroups = 6;  // SWA, MLA C4A, MLA C128A, three compressors
inline constexpr int kV4Compressors = 3;

// What the two host-mapping DeepSeek-V4 states (vllm-0.24, vllm-0.27) register alike: DeepSeek-V4
// only; released before adaptive verification (0.28.0), so their results under it are what-ifs;
// the host split and the host mapping read, which a graph would freeze; pinned, non_blocking
// copies (no sync, docs/states.md s.3); the indexer's native decode path.
inline void HostMappedV4State(ImplInfo& i) {
  i.role = ImplRole::kVllmState;
  i.models = {ModelKind::kV4};
  i.released_with_adaptive_verification = false;
  i.traits.reads_host_boundaries = true;
  i.traits.reads_host_totals = true;
  i.traits.graph_capturable = false;
  i.traits.serializes_host = false;
  i.traits.native_indexer_decode = true;
}

// A DeepSeek-V4 state's estimated costs (no calibration measures V4 yet): `gpu_us`, the GPU us per
// suite of an H200 bench of the V4 states (graph method, cold L2, batch 16,
// docs/oracle-results/h200-bench-v4-47474.md); `launches`, what `verify --model v4 --json` counts
// at batch 16; the per-token and host terms of the state's DeepSeek-V4.1 counterpart. Cases in
// the order prefill, chunked prefill, mixed, decode, verify, adaptive verify, draft, adaptive draft.
inline void EstimatedV4Costs(ImplInfo& i, const std::array<double, ImplCostDefaults::kCases>& gpu_us,
                             const std::array<int32_t, ImplCostDefaults::kCases>& launches, double gpu_us_per_token,
                             double host_us, double host_us_per_req) {
  i.default_cost.declared = true;
  i.default_cost.gpu_us = gpu_us;
  i.default_cost.launches = launches;
  i.default_cost.gpu_us_per_token = gpu_us_per_token;
  i.default_cost.host_us = host_us;
  i.default_cost.host_us_per_req = host_us_per_req;
}

// CommonAttentionMetadata.max_seq_len: the host's longest sequence.
inline int64_t HostMaxSeqLen(const BatchInputs& in) {
  const int32_t* seq = in.host.seq_lens != nullptr ? in.host.seq_lens : in.device.seq_lens;
  int64_t m = 0;
  for (int32_t i = 0; i < in.sizes.num_reqs; ++i) m = std::max<int64_t>(m, seq[i]);
  return m;
}

// The DeepSeek-V4 layout is required by every builder here.
inline absl::Status RequireV4(const SuiteStep& s, const char* who) {
  if (s.consts.model != ModelKind::kV4)
    return absl::FailedPreconditionError(absl::StrCat(who, " builds DeepSeek-V4's metadata; the suite's model is ",
                                                      std::string(ModelName(s.consts.model))));
  if (s.layout.c128a_stride <= 0)
    return absl::FailedPreconditionError(absl::StrCat(who, ": the layout has no C128A buffers (c128a_stride 0)"));
  return absl::OkStatus();
}

// DeepseekV4SparseMLAMetadataBuilder.build, group k (0: C4A, ratio 4; 1: C128A, ratio 128),
// after its token map `t2r`:
//   get_compressed_slot_mapping(N, qsl, seq_lens, block_table.clamp_(min=0), num_states, ratio,
//     out=compressed_slot_mapping_buffer): the clamp [k] (in place from 0.26.0; 0.24.0 / 0.25.0
//     `clamp(min=0)`, out of place: `clamp_in_place` false), out.fill_(-1) [f], the kernel [k]
//     (the signature of <= 0.30.0: slot_mapping not read)
//   C128A: _build_c128a_metadata: build_c128a_topk_metadata [k] over the N_d + N_p tokens, width
//     C128aWidth(max_seq_len), reading req_id_per_token (`t2r`) and cm.block_table_tensor (the
//     clamped table when the clamp was in place).
// Ratio 4 writes s.out.mla_r2_slots, ratio 128 s.out.mla_r1_slots (kernels/suite/suite.h).
// `c128a_width` 0: the active width of the host's longest sequence (0.26.0 on); 0.24.0 passes the
// buffer's whole width (c128a_max_compressed): the layout's c128a_stride here.
template <class Backend>
absl::Status MlaV4BuildOps(Backend& be, const SuiteStep& s, int k, const int32_t* t2r, bool clamp_in_place,
                           int32_t c128a_width = 0) {
  DS_RETURN_IF_ERROR(RequireV4(s, "MLA (DeepSeek-V4)"));
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  const int32_t R = z.num_reqs, W = z.bt_width, ratio = MlaRatio(s.consts, k);
  int64_t* out = k == 0 ? s.out.mla_r2_slots : s.out.mla_r1_slots;
  const int32_t* bt = in.device.block_table;
  int32_t stride = z.bt_stride;
  if (R > 0 && W > 0) {
    if (clamp_in_place) {
      Issue(be, ops::ClampMinZero2DKernel{const_cast<int32_t*>(in.device.block_table), z.bt_stride, R, W});
    } else {
      int32_t* clamped = be.template Scratch<int32_t>(static_cast<size_t>(R) * static_cast<size_t>(W));
      DS_RETURN_IF_ERROR(be.status());
      Issue(be, ops::Binary2DKernel{ops::View2D::Matrix(in.device.block_table, z.bt_stride), S(0), clamped, R, W,
                                    ops::BinaryOp::kMax});
      bt = clamped;
      stride = W;
    }
  }
  CompressedSlotParams c{in.device.query_start_loc, in.device.seq_lens, bt, in.device.slot_mapping, nullptr, out,
                         R, z.capacity, stride, ratio, s.consts.mla_block_size};
  c.ignore_slot_mapping = 1;
  FillI64MinusOneOverwritten(be, out, z.capacity, c);
  DS_RETURN_IF_ERROR(CanImplementCompressedSlots(c));
  if (CompressedSlotKernel::Shape(c).grid > 0) be.Launch(CompressedSlotKernel{c}, CompressedSlotKernel::Shape(c));
  if (k == 1 && z.num_tokens > 0) {
    const C128aParams p{in.device.query_start_loc, in.device.seq_lens, t2r, in.device.block_table,
                        in.device.slot_mapping, s.out.c128a_decode, s.out.c128a_decode_lens, s.out.c128a_prefill,
                        R, z.num_tokens, z.num_decode_tokens, z.bt_stride, ratio, s.consts.mla_block_size,
                        c128a_width > 0 ? c128a_width : C128aWidth(s.consts, HostMaxSeqLen(in)),
                        s.layout.c128a_stride};
    DS_RETURN_IF_ERROR(CanImplementC128a(p));
    be.Launch(C128aKernel{p}, C128aKernel::Shape(p));
  }
  return be.status();
}

// CompressorMetadataBuilder.build (DeepSeek-V4), after its token map: block_table_tensor.clamp_(min=0) [k].
template <class Backend>
absl::Status CompressorV4BuildOps(Backend& be, const SuiteStep& s) {
  DS_RETURN_IF_ERROR(RequireV4(s, "compressor (DeepSeek-V4)"));
  const BatchSizes& z = s.in->sizes;
  if (z.num_reqs > 0 && z.bt_width > 0)
    Issue(be, ops::ClampMinZero2DKernel{const_cast<int32_t*>(s.in->device.block_table), z.bt_stride, z.num_reqs,
                                        z.bt_width});
  return be.status();
}

// Up to 0.30.0 each KV-cache group builds its own token map (file comment): `map(buf)` is the
// state's mapping into `buf`, returning absl::StatusOr<const int32_t*>; every group maps into a
// scratch buffer of `own` entries of its own, taken just before its mapping.
//
// The two MLA groups, C4A then C128A, each reading its own map: the block-table clamp in place and
// C128A's active width (0.26.0 on).
template <class Backend, class MapFn>
absl::Status MlaV4OwnMapOps(Backend& be, const SuiteStep& s, size_t own, const MapFn& map) {
  for (int k = 0; k < 2; ++k) {
    int32_t* buf = be.template Scratch<int32_t>(own);
    DS_RETURN_IF_ERROR(be.status());
    DS_ASSIGN_OR_RETURN(const int32_t* t2r, map(buf));
    DS_RETURN_IF_ERROR(MlaV4BuildOps(be, s, k, t2r, /*clamp_in_place=*/true));
  }
  return absl::OkStatus();
}

// The three compressor groups (CompressorMetadataBuilder.build x3): each maps (no op here reads
// the map), then clamps the block table.
template <class Backend, class MapFn>
absl::Status CompressorsV4OwnMapOps(Backend& be, const SuiteStep& s, size_t own, const MapFn& map) {
  for (int c = 0; c < kV4Compressors; ++c) {
    int32_t* buf = be.template Scratch<int32_t>(own);
    DS_RETURN_IF_ERROR(be.status());
    DS_RETURN_IF_ERROR(map(buf).status());
    DS_RETURN_IF_ERROR(CompressorV4BuildOps(be, s));
  }
  return absl::OkStatus();
}

// DeepseekV32IndexerMetadataBuilder.build, ratio 4, before the decode path (every state):
// get_compressed_slot_mapping (no slot_mapping): out.fill_(-1) [f] + kernel [k] into
// indexer_r2_slots; compressed_seq_lens = seq_lens // 4 [k] into indexer_r2_csl; then the
// prefill chunks (kernels/suite/vllm_indexer_ops.h). Returns the compressed lengths.
template <class Backend>
absl::StatusOr<const int32_t*> IndexerV4Setup(Backend& be, const SuiteStep& s) {
  DS_RETURN_IF_ERROR(RequireV4(s, "indexer (DeepSeek-V4)"));
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  const int32_t ratio = IndexerRatio(s.consts, 1);
  int64_t* slots = s.out.indexer_r2_slots;
  int32_t* csl = s.out.indexer_r2_csl;
  CompressedSlotParams c = MakeCompressedSlotParams(z, in.device, s.consts, ratio, nullptr, slots);
  c.ignore_slot_mapping = 1;
  FillI64MinusOneOverwritten(be, slots, z.capacity, c);
  DS_RETURN_IF_ERROR(CanImplementCompressedSlots(c));
  if (CompressedSlotKernel::Shape(c).grid > 0) be.Launch(CompressedSlotKernel{c}, CompressedSlotKernel::Shape(c));
  Issue(be, Vec(V(in.device.seq_lens), S(ratio), csl, z.num_reqs, ops::BinaryOp::kFloorDiv));
  DS_RETURN_IF_ERROR(IndexerPrefill(be, s, s.out.indexer[1], ratio, csl));
  return static_cast<const int32_t*>(csl);
}

// State (c), 0.28.0 / 0.29.0, the SM100 varlen path: the old chain without the
// per_req_decode_lens copy (25 launches at q = 1), `seq_lens //= 4` in place (the varlen path is
// never native, so seq_lens is a buffer view) [k], DeepGEMM's scheduler metadata [k][c].
template <class Backend>
absl::Status IndexerV4VarlenOps(Backend& be, const SuiteStep& s) {
  DS_RETURN_IF_ERROR(IndexerV4Setup(be, s).status());
  const BatchSizes& z = s.in->sizes;
  if (z.num_decodes == 0) return be.status();
  const IndexerOutputs& o = s.out.indexer[1];
  DS_RETURN_IF_ERROR(IndexerDecodeChain(be, s, o, /*per_req_copy=*/false));
  Issue(be, Vec(V(o.seq_out), S(IndexerRatio(s.consts, 1)), o.seq_out, z.num_decode_tokens, ops::BinaryOp::kFloorDiv));
  return IndexerSchedule(be, o.seq_out, o.indices, z.num_decode_tokens);
}

// split_decodes_and_prefills(cm, decode_threshold, require_uniform=True) on the HOST
// query_start_loc_cpu, as the indexer of 0.20.0-0.27.1 calls it on SM100 (the varlen path did not
// exist; require_uniform = not use_flattening): every request a decode when every host length
// equals the first or is 0, else the requests before the first whose length differs from the
// first's; none when the first exceeds the threshold. Returns (num_decodes, num_decode_tokens).
inline std::pair<int32_t, int32_t> HostUniformDecodeSplit(const BatchInputs& in, int32_t threshold) {
  const int32_t R = in.sizes.num_reqs, N = in.sizes.num_tokens;
  const int32_t* hq = in.host.query_start_loc;
  if (R <= 0) return {0, 0};
  int32_t max_q = 0;
  for (int32_t r = 0; r < R; ++r) max_q = MaxI(max_q, hq[r + 1] - hq[r]);
  if (max_q <= threshold && threshold <= 1) return {R, N};
  const int32_t first = hq[1] - hq[0];
  if (first > threshold) return {0, 0};
  bool uniform = true;
  for (int32_t r = 0; r < R && uniform; ++r) uniform = hq[r + 1] - hq[r] == first || hq[r + 1] == hq[r];
  if (uniform) return {R, N};
  int32_t nd = 0;
  while (nd < R && hq[nd + 1] - hq[nd] == first) ++nd;
  return {nd, hq[nd]};
}

// DeepseekV32IndexerMetadataBuilder.build, ratio 4, as 0.20.0-0.27.1 run it on SM100 (states (a)
// and (b), docs/states.md s.3): the native decode path, on the indexer's own uniform split.
//   get_compressed_slot_mapping: out.fill_(-1) [f] + kernel [k]; compressed_seq_lens = seq // 4 [k]
//   prefill chunks on the uniform split (kernels/suite/vllm_indexer_ops.h)
//   decodes: torch.diff(qsl[:nd + 1], out=decode_lens_buffer[:nd]) [k]; decode_lens_cpu from the
//     host, L = its max (use_native: L <= next_n, always with the uniform split)
//     next_n > 1: decode_seq_lens_buffer[:nd * L].view(nd, L)[:] =
//                   seq[:nd].unsqueeze(1) - L [k] + 1 [k] + offsets[:L] [k], the assignment [c];
//                 seq_lens //= 4 in place (a buffer view) [k]
//     next_n = 1: expanded_seq_lens_buffer[:nd] = seq[:nd] // 4 [k][c]; [nd:ndt] = 0 [f]
//     get_paged_mqa_logits_metadata(seq_lens, ...) [k] + schedule_metadata[:] = ... [c] (DeepGEMM's
//       non-varlen scheduler; its output is not compared: here one atom per request)
//   The block table handed out is cm.block_table_tensor[:nd]: no op.
template <class Backend>
absl::Status IndexerV4NativeOps(Backend& be, const SuiteStep& s) {
  DS_RETURN_IF_ERROR(RequireV4(s, "indexer (DeepSeek-V4)"));
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  const int32_t ratio = IndexerRatio(s.consts, 1), next_n = 1 + s.consts.spec_k;
  const IndexerOutputs& o = s.out.indexer[1];
  int32_t* csl = s.out.indexer_r2_csl;
  CompressedSlotParams c = MakeCompressedSlotParams(z, in.device, s.consts, ratio, nullptr, s.out.indexer_r2_slots);
  c.ignore_slot_mapping = 1;
  FillI64MinusOneOverwritten(be, s.out.indexer_r2_slots, z.capacity, c);
  DS_RETURN_IF_ERROR(CanImplementCompressedSlots(c));
  if (CompressedSlotKernel::Shape(c).grid > 0) be.Launch(CompressedSlotKernel{c}, CompressedSlotKernel::Shape(c));
  Issue(be, Vec(V(in.device.seq_lens), S(ratio), csl, z.num_reqs, ops::BinaryOp::kFloorDiv));
  // The indexer's own split (the host's uniform one) for its prefill and decode rows.
  be.NoteHostArrayOp();
  const auto [nd, ndt] = HostUniformDecodeSplit(in, next_n);
  BatchInputs split_in = in;
  split_in.sizes.num_decodes = nd;
  split_in.sizes.num_decode_tokens = ndt;
  SuiteStep split = s;
  split.in = &split_in;
  DS_RETURN_IF_ERROR(IndexerPrefill(be, split, o, ratio, csl));
  if (nd == 0) return be.status();
  Issue(be, ops::DiffKernel{in.device.query_start_loc, o.decode_lens, nd});
  be.NoteHostArrayOp();  // decode_lens_cpu = diff(qsl_cpu[:nd + 1]), .max(), .min()
  int32_t L = 0;
  for (int32_t r = 0; r < nd; ++r) L = MaxI(L, in.host.query_start_loc[r + 1] - in.host.query_start_loc[r]);
  int32_t rows = ndt;
  if (next_n > 1) {
    rows = nd * L;
    int32_t* a = be.template Scratch<int32_t>(static_cast<size_t>(nd));
    int32_t* b = be.template Scratch<int32_t>(static_cast<size_t>(MaxI(rows, 1)));
    DS_RETURN_IF_ERROR(be.status());
    if (L > 0) {
      // offsets_buffer[:L]: the persistent arange(next_n), the suite's arange here.
      Issue(be, Vec(V(in.device.seq_lens), S(L), a, nd, ops::BinaryOp::kSub));
      Issue(be, ops::AddScalarKernel{a, a, nd, 1});
      Issue(be, ops::Binary2DKernel{ops::View2D::Column(a), ops::View2D::Row(s.arange), b, nd, L, ops::BinaryOp::kAdd});
      CopyD2D(be, o.seq_out, b, rows);
      Issue(be, Vec(V(o.seq_out), S(ratio), o.seq_out, rows, ops::BinaryOp::kFloorDiv));
    }
  } else {
    int32_t* tmp = be.template Scratch<int32_t>(static_cast<size_t>(nd));
    DS_RETURN_IF_ERROR(be.status());
    Issue(be, Vec(V(in.device.seq_lens), S(ratio), tmp, nd, ops::BinaryOp::kFloorDiv));
    CopyD2D(be, o.seq_out, tmp, nd);
    FillI32(be, o.seq_out + nd, 0, ndt - nd);
  }
  return IndexerSchedule(be, o.seq_out, s.arange, MinI(nd, rows));
}

}  // namespace dspark::vllm_ops
