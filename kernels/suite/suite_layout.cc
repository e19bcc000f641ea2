// The persistent buffers of a suite: their layout, the step-fits check, scratch and staging
// sizes, and the host images of the buffers (kernels/suite/suite.h).
#include "kernels/suite/suite.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "kernels/common/byte_math.h"
#include "kernels/prefill_segments.cuh"
#include "kernels/swa.cuh"

namespace dspark {

// ---------------------------------------------------------------- layout

int32_t PrefillChunkCuBound(int32_t reqs, int32_t tokens) {
  return static_cast<int32_t>(std::min<int64_t>(2 * (int64_t{std::max(reqs, 0)} + std::max(tokens, 0)), INT32_MAX));
}

SuiteLayout MakeSuiteLayout(int32_t max_tokens, int32_t max_reqs, int32_t max_bt_width, const ModelConsts& consts) {
  SuiteLayout l;
  l.token_capacity = std::max(max_tokens, 0);
  l.max_reqs = std::max(max_reqs, 0);
  l.bt_out_stride = std::max(max_bt_width, 1);
  l.window = consts.swa_window;
  l.noncausal_width = SwaNoncausalWidth(consts.swa_window, consts.spec_k);
  l.max_segments = PrefillSegmentBound(l.max_reqs, l.token_capacity, consts.prefill_segment);
  l.arange_len = std::max(l.token_capacity, l.window);
  l.prefill_cu_len = PrefillChunkCuBound(l.max_reqs, l.token_capacity);
  l.prefill_rows = static_cast<int32_t>(std::min<int64_t>(4 * int64_t{l.token_capacity}, INT32_MAX));
  if (consts.model == ModelKind::kV4) l.c128a_stride = C128aWidth(consts, int64_t{l.bt_out_stride} * consts.mla_block_size);
  return l;
}

absl::Status CheckFits(const SuiteLayout& l, const BatchSizes& s, const ModelConsts& consts) {
  if (s.capacity > l.token_capacity)
    return absl::OutOfRangeError(absl::StrFormat(
        "suite: step capacity=%d exceeds the persistent buffers' token_capacity=%d", s.capacity, l.token_capacity));
  if (s.num_reqs > l.max_reqs)
    return absl::OutOfRangeError(
        absl::StrFormat("suite: num_reqs=%d exceeds the persistent buffers' max_reqs=%d", s.num_reqs, l.max_reqs));
  if (s.bt_width > l.bt_out_stride)
    return absl::OutOfRangeError(absl::StrFormat(
        "suite: bt_width=%d exceeds the indexer bt_out row stride %d", s.bt_width, l.bt_out_stride));
  if (s.num_decodes > s.capacity)
    return absl::OutOfRangeError(absl::StrFormat(
        "suite: num_decodes=%d exceeds capacity=%d (per_req is a per-token buffer)", s.num_decodes, s.capacity));
  if (l.window != consts.swa_window || l.noncausal_width != SwaNoncausalWidth(consts.swa_window, consts.spec_k))
    return absl::InvalidArgumentError(
        absl::StrFormat("suite: layout window=%d / noncausal_width=%d differ from swa_window=%d, spec_k=%d", l.window,
                        l.noncausal_width, consts.swa_window, consts.spec_k));
  if (l.prefill_cu_len < PrefillChunkCuBound(s.num_reqs, s.capacity))
    return absl::OutOfRangeError(absl::StrFormat("suite: prefill_cu_len=%d below the step's bound %d",
                                                 l.prefill_cu_len, PrefillChunkCuBound(s.num_reqs, s.capacity)));
  if (consts.model == ModelKind::kV4 &&
      l.c128a_stride < C128aWidth(consts, int64_t{s.bt_width} * consts.mla_block_size))
    return absl::OutOfRangeError(absl::StrFormat("suite: the C128A row stride %d is below the step's width %d",
                                                 l.c128a_stride,
                                                 C128aWidth(consts, int64_t{s.bt_width} * consts.mla_block_size)));
  const int32_t bound = PrefillSegmentBound(s.num_reqs - s.num_decodes, s.capacity, consts.prefill_segment);
  if (l.max_segments < bound)
    return absl::OutOfRangeError(
        absl::StrFormat("suite: max_segments=%d below the step's bound %d", l.max_segments, bound));
  return absl::OkStatus();
}

size_t SuiteScratchBytes(const SuiteLayout& l) {
  const uint64_t cap = static_cast<uint64_t>(std::max(l.token_capacity, 0));
  const uint64_t reqs = static_cast<uint64_t>(std::max(l.max_reqs, 0));
  const uint64_t stride = static_cast<uint64_t>(std::max(l.bt_out_stride, 0));
  const uint64_t window = static_cast<uint64_t>(std::max(l.window, 0));
  const uint64_t seg = static_cast<uint64_t>(std::max(l.max_segments, 0));
  // Worst run (chain): 5 [n, window] SWA tensors, two indexers' expanded rows, the clamped block
  // tables, a few dozen per-token and per-request tensors; 256-byte alignment per allocation.
  // Saturating: a layout too large for 64 bits gives kBytesOverflow, never a small arena.
  uint64_t int32s = SatMul(6, cap, window);
  int32s = SatAdd(int32s, SatMul(3, cap, stride));
  int32s = SatAdd(int32s, SatMul(2, reqs, stride));
  int32s = SatAdd(int32s, SatAdd(SatMul(64, cap), SatAdd(SatMul(16, reqs), SatMul(8, seg))));
  return SatAdd(SatAdd(SatMul(4, int32s), SatMul(32, cap)), 256 * 256);
}

size_t MaxWorkspaceBytes(const SuiteLayout& l) {
  size_t bytes = 0;
  for (Impl impl : AllImpls()) bytes = std::max(bytes, impl.info().workspace_bytes(l));
  return bytes;
}

size_t SuiteStagingBytes(const SuiteLayout& l) {
  const uint64_t cap = static_cast<uint64_t>(std::max(l.token_capacity, 0));
  const uint64_t reqs = static_cast<uint64_t>(std::max(l.max_reqs, 0));
  const uint64_t seg = static_cast<uint64_t>(std::max(l.max_segments, 0));
  // The most any state stages in one build: DeepSeek-V4's vllm-0.24 maps tokens on the host for
  // SWA and the three compressors as int64 (8 bytes a token each) and for both MLA groups as
  // int32, 40 bytes a token; room for 16 int32 per token and per request, and the alignment of
  // 64 copies. The CPU backend accounts its copies against the same size (backend.h), so the
  // emulated tests fail where a GPU build would run out.
  return 4 * (16 * cap + 16 * reqs + 3 * seg + 3) + 256 * 64;  // < 2^40 for int32 fields: no overflow
}

// ---------------------------------------------------------------- images

void SuiteImage::Indexer::Fill(const SuiteLayout& l, size_t bt_cells, int32_t poison) {
  const size_t cap = static_cast<size_t>(l.token_capacity);
  seq_out.assign(cap, poison);
  bt_out.assign(bt_cells, poison);
  decode_lens.assign(cap, poison);
  indices.assign(cap, poison);
  per_req.assign(cap, poison);
  prefill_cu_seq_lens.assign(static_cast<size_t>(std::max(l.prefill_cu_len, 1)), poison);
  prefill_token_to_seq.assign(static_cast<size_t>(std::max(l.prefill_rows, 1)), poison);
  prefill_ks.assign(cap, poison);
  prefill_ke.assign(cap, poison);
}

SuiteImage SuiteImage::Filled(const SuiteLayout& l, int32_t poison) {
  const size_t cap = static_cast<size_t>(l.token_capacity);
  SuiteImage im;
  im.token_to_req.assign(cap, poison);
  im.swa_lens.assign(cap, poison);
  im.swa_indices.assign(cap * static_cast<size_t>(l.window), poison);
  im.swa_indices_noncausal.assign(cap * static_cast<size_t>(l.noncausal_width), poison);
  im.swa_gather_lens.assign(static_cast<size_t>(std::max(l.max_reqs, 1)), poison);
  im.mla_r1_slots.assign(cap, poison);
  im.mla_r2_slots.assign(cap, poison);
  im.ring_slots.assign(cap, poison);
  for (Indexer& x : im.indexer) x.Fill(l, cap * static_cast<size_t>(l.bt_out_stride), poison);
  im.indexer_r2_slots.assign(cap, poison);
  im.indexer_r2_csl.assign(static_cast<size_t>(std::max(l.max_reqs, 1)), poison);
  im.seg_qsl.assign(static_cast<size_t>(l.max_segments) + 1, poison);
  im.seg_seq_lens.assign(static_cast<size_t>(l.max_segments), poison);
  im.seg_count.assign(2, poison);
  if (l.c128a_stride > 0) {
    im.c128a_decode.assign(cap * static_cast<size_t>(l.c128a_stride), poison);
    im.c128a_decode_lens.assign(cap, poison);
    im.c128a_prefill.assign(cap * static_cast<size_t>(l.c128a_stride), poison);
  }
  return im;
}

SuiteOutputs SuiteImage::View() {
  SuiteOutputs o;
  o.token_to_req = token_to_req.data();
  o.swa_lens = swa_lens.data();
  o.swa_indices = swa_indices.data();
  o.swa_indices_noncausal = swa_indices_noncausal.data();
  o.swa_gather_lens = swa_gather_lens.data();
  o.mla_r1_slots = mla_r1_slots.data();
  o.mla_r2_slots = mla_r2_slots.data();
  o.ring_slots = ring_slots.data();
  for (int k = 0; k < 2; ++k) {
    Indexer& x = indexer[k];
    o.indexer[k] = IndexerOutputs{x.seq_out.data(),         x.bt_out.data(),     x.decode_lens.data(),
                                  x.indices.data(),         x.per_req.data(),    x.prefill_cu_seq_lens.data(),
                                  x.prefill_token_to_seq.data(), x.prefill_ks.data(), x.prefill_ke.data()};
  }
  o.indexer_r2_slots = indexer_r2_slots.data();
  o.indexer_r2_csl = indexer_r2_csl.data();
  o.seg_qsl = seg_qsl.data();
  o.seg_seq_lens = seg_seq_lens.data();
  o.seg_count = seg_count.data();
  if (!c128a_decode_lens.empty()) {
    o.c128a_decode = c128a_decode.data();
    o.c128a_decode_lens = c128a_decode_lens.data();
    o.c128a_prefill = c128a_prefill.data();
  }
  return o;
}

}  // namespace dspark
