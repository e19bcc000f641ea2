// The builders of vLLM's states (a)-(d) (docs/design.md s.3, docs/states.md s.2-3), op for op,
// each written once over a Backend. Every function names the vLLM function it stands for; the
// launch count of each is in kernels/impls/README.md. [k] kernel, [c] copy, [f] fill, [h2d]
// host-to-device copy. An op with nothing to do is not issued (a graph's node count equals the
// counted launches).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/indexer_prefill.cuh"
#include "kernels/paged_mqa_schedule.cuh"
#include "kernels/suite/suite_impls.h"

namespace dspark::vllm_ops {

using suite_internal::CopyD2D;
using suite_internal::FillI32;
using suite_internal::FillI64MinusOne;
using suite_internal::FillI64MinusOneOverwritten;
using suite_internal::IndexSelect;
using suite_internal::IndexSelectRows;
using suite_internal::Issue;
using suite_internal::S;
using suite_internal::V;
using suite_internal::Vec;

inline constexpr int32_t kNumSms = 132;  // [SMs] an H200's, DeepGEMM's num_sms
// split_indexer_prefill_chunks' default budgets (ModelConsts says where they come from).
inline constexpr int64_t kIndexerPrefillWorkspace = ModelConsts{}.indexer_prefill_workspace;  // [KV rows]
inline constexpr int64_t kIndexerMaxLogits = ModelConsts{}.indexer_max_logits;                // [elements]

// The index of torch.repeat_interleave(repeats, output_size=n_out) on CUDA: [k] int64 cast of
// the repeats, cub's scan as [k] tile init + [k] scan, [k] the compute kernel. The caller's
// index_select (suite_internal::IndexSelect, PyTorch's small- or large-index kernel) makes the
// fifth launch (docs/states.md s.2.8).
template <class Backend>
absl::StatusOr<const int32_t*> RepeatInterleaveIndex(Backend& be, const int32_t* repeats, int32_t n, int32_t n_out) {
  int64_t* wide = be.template Scratch<int64_t>(static_cast<size_t>(MaxI(n, 1)));
  int32_t* tiles = be.template Scratch<int32_t>(1);
  int32_t* cumsum = be.template Scratch<int32_t>(static_cast<size_t>(MaxI(n, 1)));
  int32_t* index = be.template Scratch<int32_t>(static_cast<size_t>(MaxI(n_out, 1)));
  DS_RETURN_IF_ERROR(be.status());
  if (n == 0) return index;
  Issue(be, ops::CastToInt64Kernel{repeats, wide, n});
  Issue(be, ops::ScanTileInitKernel{tiles, 1});
  Issue(be, ops::InclusiveScanKernel{repeats, cumsum, n});
  Issue(be, ops::RepeatInterleaveKernel{repeats, cumsum, index, n, n_out});
  return index;
}

// (c) CommonAttentionMetadata.token_to_req_indices before #56562 (read_file id 70822538211):
// lens = qsl[1:] - qsl[:-1] [k]; arange [k]; repeat_interleave(arange, lens,
// output_size=int(qsl_cpu[-1])) [5]; buffer[:M].copy_ [c]; buffer[M:N].zero_() [f]. The host gives
// only the total M. 8 launches, 9 with graph padding. Also what `microbench` times as its
// "device-chain" mapping row.
template <class Backend>
absl::StatusOr<const int32_t*> TokenMapPre56562(Backend& be, const TokenMapArgs& a) {
  DS_RETURN_IF_ERROR(ValidateTokenMapArgs(a, /*reads_host=*/true));
  const int32_t R = a.num_reqs, N = a.num_tokens;
  const int32_t mapped = a.host_query_start_loc[R];
  if (R > 0) {
    int32_t* lens = be.template Scratch<int32_t>(static_cast<size_t>(R));
    int32_t* arange = be.template Scratch<int32_t>(static_cast<size_t>(R));
    int32_t* values = be.template Scratch<int32_t>(static_cast<size_t>(MaxI(mapped, 1)));
    DS_RETURN_IF_ERROR(be.status());
    Issue(be, ops::DiffKernel{a.query_start_loc, lens, R});
    Issue(be, ops::ArangeKernel{arange, R, 0});
    if (mapped > 0) {
      DS_ASSIGN_OR_RETURN(const int32_t* index, RepeatInterleaveIndex(be, lens, R, mapped));
      IndexSelect(be, arange, R, index, values, mapped);
      CopyD2D(be, a.out, values, mapped);
    }
  }
  FillI32(be, a.out + mapped, 0, N - mapped);
  DS_RETURN_IF_ERROR(be.status());
  return static_cast<const int32_t*>(a.out);
}

// (d) CommonAttentionMetadata.token_to_req_indices as released, 0.30.0-0.34.0
// (vllm/v1/attention/backend.py): num_mapped = int(query_start_loc_cpu[-1]), the HOST total,
// then compute_token_to_req_indices(query_start_loc, buffer, num_mapped, max(num_mapped, N)):
// _token_request_mapping_kernel [k] (vllm/v1/attention/ops/metadata.py), tokens at or past
// num_mapped mapped to 0.
template <class Backend>
absl::StatusOr<const int32_t*> TokenMapReleased56562(Backend& be, const TokenMapArgs& a) {
  DS_RETURN_IF_ERROR(ValidateTokenMapArgs(a, /*reads_host=*/true));
  const int32_t mapped = a.host_query_start_loc[a.num_reqs];
  be.NoteHostArrayOp();  // int(query_start_loc_cpu[-1])
  TokenMapParams p{a.query_start_loc, a.out, a.num_reqs, MaxI(mapped, a.num_tokens)};
  p.num_mapped = mapped;
  const LaunchShape shape = TokenMapKernel::Shape(p);
  if (shape.grid > 0) be.Launch(TokenMapKernel{p}, shape);
  DS_RETURN_IF_ERROR(be.status());
  return static_cast<const int32_t*>(a.out);
}

// The same on a suite step's token_to_req buffer.
template <class Backend>
absl::StatusOr<const int32_t*> TokenMapPre56562(Backend& be, const SuiteStep& s) {
  return TokenMapPre56562(be, suite_internal::SuiteTokenMapArgs(s, s.out.token_to_req, s.layout.token_capacity));
}

// What the seed's two host-mapping states on DeepSeek-V4.1 (vllm-pre47474, vllm-47474) register
// alike: rows written only through the deduplicated builders; released before adaptive
// verification (0.28.0), so their results under it are what-ifs; the host split and totals
// read, frozen by a graph; pageable copies that serialise the host; the old indexer chain; no
// #57207 (no release has it).
inline void HostMappedV41State(ImplInfo& i) {
  i.rows_via_builder_memo = true;  // its SWA and indexer rows: SwaBuild / IndexerBuild only
  i.released_with_adaptive_verification = false;
  i.traits.reads_host_boundaries = true;
  i.traits.reads_host_totals = true;
  i.traits.builds_prefill_segments = false;
  i.traits.graph_capturable = false;
  i.traits.serializes_host = true;
  i.traits.old_indexer_chain = true;
}

// What #56562's kernels register alike in (d) vllm-0.31 and (e) vllm-0.34: rows written only
// through the deduplicated builders; the host totals read (the prefill chunk plan from qsl_cpu,
// the indexer's decode_lens_cpu max / min), none of them per-request for decode rows; no #57207
// (no release has it).
inline void Kernels56562State(ImplInfo& i) {
  i.rows_via_builder_memo = true;  // its SWA and indexer rows: SwaBuild / IndexerBuild only
  i.traits.reads_host_totals = true;
  i.traits.builds_prefill_segments = false;
}

// (a) / (b): the host mapping np.repeat(arange(R), diff(qsl_cpu)) copied into `out` [h2d], tail
// zeroed [f] when `zero_tail` (#47474's shared buffer; pre-#47474 builders do not zero it).
// HostMapType::kInt64: torch.repeat_interleave(torch.arange(R), ...) is int64 (arange's default),
// so its copy_ into the int32 buffer moves the int64 tensor to the device [h2d] and narrows it
// there [k] (vLLM 0.24.0's SWA and compressor builders; profiled on the H200).
// (The host array is HostTokenMap, kernels/token_map_impls.h.)
enum class HostMapType { kInt32, kInt64 };
template <class Backend>
absl::StatusOr<const int32_t*> TokenMapFromHost(Backend& be, const SuiteStep& s, int32_t* out, bool zero_tail,
                                                HostMapType type = HostMapType::kInt32) {
  const BatchInputs& in = *s.in;
  const int32_t R = in.sizes.num_reqs, N = in.sizes.num_tokens;
  const int32_t* hq = in.host.query_start_loc;
  const int32_t M = hq[R];
  be.NoteHostArrayOp();
  if (M > 0 && type == HostMapType::kInt64) {
    const std::vector<int64_t> map = HostTokenMap<int64_t>(hq, R);
    int64_t* wide = be.template Scratch<int64_t>(map.size());
    DS_RETURN_IF_ERROR(be.status());
    be.CopyToDevice(wide, map.data(), sizeof(int64_t) * map.size());
    Issue(be, ops::CastToInt32Kernel{wide, out, M});
  } else if (M > 0) {
    const std::vector<int32_t> map = HostTokenMap<int32_t>(hq, R);
    be.CopyToDevice(out, map.data(), sizeof(int32_t) * map.size());
  }
  if (zero_tail) FillI32(be, out + M, 0, N - M);
  DS_RETURN_IF_ERROR(be.status());
  return out;
}

// DeepseekSparseSWAMetadataBuilder.build (V4.1), the same in (a)-(d):
//   is_valid_token.copy_(slot_mapping >= 0) [k][c]; from 0.31.0 torch.ge(slot_mapping, 0,
//            out=is_valid_token) [k] (`one_launch_mask`, vllm-0.31 / vllm-0.34 as 0.31.0-0.34.0 have it)
//   ndt > 0: decode_swa_lens[ndt:] = 0 [f]; _compute_swa_indices_and_lens_kernel rows [0, ndt) [k],
//            or, when CommonAttentionMetadata.causal is false (the DSpark draft step),
//            _compute_dspark_noncausal_swa_indices_kernel into decode_swa_indices_noncausal
//            (width get_dspark_swa_index_width = 192) instead [k]: the same count (its buffer's
//            torch.zeros is a one-time allocation)
//   npt > 0: the same kernel with token_offset = ndt, rows [ndt, N) [k]
//   prefills: _build_deepseek_v4_metadata's ComputePrefillMetadataKernel [k] into
//            prefill_gather_lens (q + min(prefix, W - 1); the persistent swa_gather_lens here,
//            a torch.empty(num_prefills) per step in vLLM)
// The token map `t2r` is the state's (host-built in (a) / (b)).
// SwaBuildOps' first part: the validity mask, into scratch that no later op reads (the only
// difference between the two mask variants).
template <class Backend>
absl::Status SwaMaskOps(Backend& be, const SuiteStep& s, bool one_launch_mask) {
  const BatchInputs& in = *s.in;
  const int32_t N = in.sizes.num_tokens;
  int32_t* valid = be.template Scratch<int32_t>(static_cast<size_t>(MaxI(N, 1)));
  int32_t* is_valid = be.template Scratch<int32_t>(static_cast<size_t>(MaxI(N, 1)));
  DS_RETURN_IF_ERROR(be.status());
  if (one_launch_mask) {
    Issue(be, ops::GeInt64ScalarKernel{in.device.slot_mapping, 0, is_valid, N});
  } else {
    Issue(be, ops::GeInt64ScalarKernel{in.device.slot_mapping, 0, valid, N});
    CopyD2D(be, is_valid, valid, N);
  }
  return be.status();
}

// SwaBuildOps' second part: every op that writes the builder's outputs, the same in both mask
// variants (it takes no scratch and reads nothing the mask wrote).
template <class Backend>
absl::Status SwaIndexOps(Backend& be, const SuiteStep& s, const int32_t* t2r) {
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  const int32_t N = z.num_tokens, ndt = z.num_decode_tokens, npt = N - ndt;
  const int32_t num_prefills = z.num_reqs - z.num_decodes;
  SwaParams p = MakeSwaParams(z, in.device, s.consts, t2r, s.out.swa_lens, s.out.swa_indices);
  DS_RETURN_IF_ERROR(CanImplementSwa(p));
  if (ndt > 0) {
    FillI32(be, s.out.swa_lens + ndt, 0, z.capacity - ndt);
    SwaParams decode = p;
    decode.num_tokens = ndt;
    if (!in.causal) {
      decode.swa_indices = s.out.swa_indices_noncausal;
      decode.noncausal_width = s.layout.noncausal_width;
    }
    DS_RETURN_IF_ERROR(CanImplementSwa(decode));
    be.Launch(SwaKernel{decode}, SwaKernel::Shape(decode));
  }
  if (npt > 0) {
    p.token_offset = ndt;
    p.num_tokens = npt;
    be.Launch(SwaKernel{p}, SwaKernel::Shape(p));
  }
  if (num_prefills > 0)
    Issue(be, SwaPrefillMetadataKernel{in.device.query_start_loc, in.device.seq_lens, s.out.swa_gather_lens, z.num_decodes,
                                       num_prefills, s.consts.swa_window});
  return be.status();
}

template <class Backend>
absl::Status SwaBuildOps(Backend& be, const SuiteStep& s, const int32_t* t2r, bool one_launch_mask = false) {
  DS_RETURN_IF_ERROR(SwaMaskOps(be, s, one_launch_mask));
  return SwaIndexOps(be, s, t2r);
}

// DeepseekV4SparseMLAMetadataBuilder.build, ratio 2: block_table_tensor.clamp_(min=0) [k] (in
// place on the step's block table: vLLM's own side effect), then get_compressed_slot_mapping:
// out.fill_(-1) [f] and _compressed_slot_mapping_kernel [k]. It reads the device qsl, not the
// token map (docs/states.md s.4: always right). Ratio 1 launches nothing: it hands out
// cm.slot_mapping and the shared token map.
template <class Backend>
absl::Status MlaRatio2BuildOps(Backend& be, const SuiteStep& s) {
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  if (z.num_reqs > 0 && z.bt_width > 0)
    Issue(be, ops::ClampMinZero2DKernel{const_cast<int32_t*>(in.device.block_table), z.bt_stride, z.num_reqs,
                                        z.bt_width});
  const CompressedSlotParams c = MakeCompressedSlotParams(z, in.device, s.consts, 2, nullptr, s.out.mla_r2_slots);
  FillI64MinusOneOverwritten(be, s.out.mla_r2_slots, z.capacity, c);
  DS_RETURN_IF_ERROR(CanImplementCompressedSlots(c));
  if (CompressedSlotKernel::Shape(c).grid > 0) be.Launch(CompressedSlotKernel{c}, CompressedSlotKernel::Shape(c));
  return be.status();
}

// CompressorMetadataBuilder.build: _ring_slot_mapping_kernel [k], reading the state's token map.
template <class Backend>
absl::Status RingBuildOps(Backend& be, const SuiteStep& s, const int32_t* t2r) {
  const BatchInputs& in = *s.in;
  const RingSlotParams ring = MakeRingSlotParams(in.sizes, in.device, s.consts, t2r, s.out.ring_slots);
  DS_RETURN_IF_ERROR(CanImplementRingSlots(ring));
  if (RingSlotKernel::Shape(ring).grid > 0) be.Launch(RingSlotKernel{ring}, RingSlotKernel::Shape(ring));
  return be.status();
}

// The shared builders above, deduplicated across implementations in the CPU check
// (kernels/suite/builder_memo.h); SWA and ring read the state's token map. SWA's mask is each
// implementation's own (its two variants differ there, in scratch only); the ops that write
// its outputs are one builder for both variants: the same ops on the same inputs.
template <class Backend>
absl::Status SwaBuild(Backend& be, const SuiteStep& s, const int32_t* t2r, bool one_launch_mask = false) {
  DS_RETURN_IF_ERROR(SwaMaskOps(be, s, one_launch_mask));
  return suite_internal::Memoized(be, s, BuilderGroup::kSwa, 0, t2r,
                                  [&](const SuiteStep& x) { return SwaIndexOps(be, x, t2r); });
}
template <class Backend>
absl::Status MlaRatio2Build(Backend& be, const SuiteStep& s) {
  return suite_internal::Memoized(be, s, BuilderGroup::kMlaR2, 0, nullptr,
                                  [&](const SuiteStep& x) { return MlaRatio2BuildOps(be, x); });
}
template <class Backend>
absl::Status RingBuild(Backend& be, const SuiteStep& s, const int32_t* t2r) {
  return suite_internal::Memoized(be, s, BuilderGroup::kRing, 0, t2r,
                                  [&](const SuiteStep& x) { return RingBuildOps(be, x, t2r); });
}

}  // namespace dspark::vllm_ops

#include "kernels/suite/vllm_indexer_ops.h"
