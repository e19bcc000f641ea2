#include "kernels/suite/suite.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/byte_math.h"
#include "kernels/common/status_macros.h"
#include "kernels/prefill_segments.cuh"
#include "kernels/reference/compressed_slots.h"
#include "kernels/reference/ring_slots.h"
#include "kernels/reference/swa_noncausal.h"
#include "kernels/reference/swa_prefill.h"
#include "kernels/reference/token_map.h"
#include "kernels/suite/builder_memo.h"
#include "kernels/suite/bt_rows.h"
#include "kernels/suite/regions.h"
#include "kernels/suite/suite_impls.h"

namespace dspark {

// ---------------------------------------------------------------- mismatches

std::string_view MismatchKindName(MismatchKind kind) {
  switch (kind) {
    case MismatchKind::kStaleHost: return "stale-host";
    case MismatchKind::kPaddingResidue: return "padding-residue";
    case MismatchKind::kBug: return "bug";
  }
  return "unknown";
}

std::string DescribeMismatches(const std::vector<FieldMismatch>& mismatches) {
  std::string out;
  for (const FieldMismatch& m : mismatches)
    absl::StrAppendFormat(&out, "%s/%s: %d differ, first at index %d (expected %d, actual %d) [%s]\n", m.builder,
                          m.field, m.count, m.index, m.expected, m.actual, std::string(MismatchKindName(m.kind)));
  return out;
}

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
  return 4 * (8 * cap + 4 * reqs + 3 * seg + 3) + 256 * 32;  // < 2^40 for int32 fields: no overflow
}

// ---------------------------------------------------------------- images

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
  for (Indexer& x : im.indexer) {
    x.seq_out.assign(cap, poison);
    x.bt_out.assign(cap * static_cast<size_t>(l.bt_out_stride), poison);
    x.decode_lens.assign(cap, poison);
    x.indices.assign(cap, poison);
    x.per_req.assign(cap, poison);
    x.prefill_cu_seq_lens.assign(static_cast<size_t>(std::max(l.prefill_cu_len, 1)), poison);
    x.prefill_token_to_seq.assign(static_cast<size_t>(std::max(l.prefill_rows, 1)), poison);
    x.prefill_ks.assign(cap, poison);
    x.prefill_ke.assign(cap, poison);
  }
  im.indexer_r2_slots.assign(cap, poison);
  im.indexer_r2_csl.assign(static_cast<size_t>(std::max(l.max_reqs, 1)), poison);
  im.seg_qsl.assign(static_cast<size_t>(l.max_segments) + 1, poison);
  im.seg_seq_lens.assign(static_cast<size_t>(l.max_segments), poison);
  im.seg_count.assign(2, poison);
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
  return o;
}

// ---------------------------------------------------------------- reference and comparison

SuiteReference ComputeSuiteReference(const BatchInputs& in, const SuiteLayout& layout, const ModelConsts& consts) {
  const BatchSizes& z = in.sizes;
  const DeviceBatch& d = in.device;
  SuiteReference r;
  r.token_to_req = ref::TokenToReq(d.query_start_loc, z.num_reqs, z.num_tokens);
  r.swa = ref::Swa(z, d, consts.swa_window, consts.swa_block_size);
  if (!in.causal) {  // the DSpark draft step: its decode rows are non-causal
    ref::SwaNonCausalRows nc = ref::SwaNonCausal(z, d, consts.swa_window,
                                                 ref::DsparkSwaIndexWidth(consts.swa_window, consts.spec_k),
                                                 consts.swa_block_size);
    for (int32_t t = 0; t < z.num_decode_tokens && t < z.num_tokens; ++t) r.swa.lens[t] = nc.lens[t];
    r.swa_noncausal_indices = std::move(nc.indices);
  }
  r.swa_gather_lens = ref::SwaPrefillGatherLens(z, d, consts.swa_window);
  // The per-capacity fields up to the last cell their references can write (the slots: tokens
  // t < max qsl, qsl[R] for a valid one; the lengths: t < N_d); the rest up to C is their fill
  // value (SuiteRegion::tail), so a step's reference costs its tokens, not its capacity.
  BatchSizes mapped = z;
  mapped.capacity = std::clamp(*std::max_element(d.query_start_loc, d.query_start_loc + z.num_reqs + 1), 0,
                               z.capacity);
  r.mla_r2_slots = ref::CompressedSlots(mapped, d, 2, consts.mla_block_size);
  r.ring_slots = ref::RingSlots(mapped, d, CompressorRingCapacity(consts.spec_k));
  r.indexer = ref::IndexerDecode(d.query_start_loc, d.seq_lens, d.block_table, z.bt_stride, z.bt_width, z.num_decodes,
                                 z.num_decode_tokens, z.num_decode_tokens);
  for (int k = 0; k < 2; ++k) r.prefill[k] = ref::IndexerPrefillStep(z, d, k + 1, consts, layout.prefill_rows);
  r.indexer_r2_seq_out.resize(static_cast<size_t>(std::max(z.num_decode_tokens, 0)));
  for (size_t t = 0; t < r.indexer_r2_seq_out.size(); ++t) r.indexer_r2_seq_out[t] = r.indexer.seq_out[t] / 2;
  r.indexer_r2_slots = ref::CompressedSlots(mapped, d, 2, consts.mla_block_size, /*read_slot_mapping=*/false);
  r.indexer_r2_csl.resize(static_cast<size_t>(std::max(z.num_reqs, 0)));
  for (size_t i = 0; i < r.indexer_r2_csl.size(); ++i) r.indexer_r2_csl[i] = d.seq_lens[i] / 2;
  r.segments = ref::Segments(z, d, in.fp8_prefill, consts.prefill_segment, layout.max_segments);
  r.seg_count = {r.segments.count};
  r.seg_max_query_len = {r.segments.max_query_len};
  return r;
}

bool HostViewStale(const BatchInputs& in) {
  const int32_t R = in.sizes.num_reqs;
  if (in.host.query_start_loc != nullptr)
    for (int32_t r = 0; r <= R; ++r)
      if (in.host.query_start_loc[r] != in.device.query_start_loc[r]) return true;
  if (in.host.seq_lens != nullptr)
    for (int32_t r = 0; r < R; ++r)
      if (in.host.seq_lens[r] != in.device.seq_lens[r]) return true;
  return false;
}

namespace {

// Accumulates one field's differences: the first one and how many. The names are copied only
// when the field differs (most fields of most steps agree).
class FieldDiff {
 public:
  FieldDiff(const std::string& builder, const std::string& field, const char* suffix = "")
      : builder_(builder), field_(field), suffix_(suffix) {}
  void Check(int64_t index, int64_t expected, int64_t actual) {
    if (expected == actual) return;
    if (m_.count == 0) {
      m_.index = index;
      m_.expected = expected;
      m_.actual = actual;
    }
    ++m_.count;
  }
  // want[0, n) against got[0, n), element i at index first + i: one memcmp when they agree
  // (the usual case), the element loop to locate and count the differences otherwise.
  template <typename T>
  void CheckSpan(int64_t first, const T* want, const T* got, int64_t n) {
    if (n <= 0) return;
    if (std::memcmp(want, got, static_cast<size_t>(n) * sizeof(T)) == 0) return;
    int64_t i = 0;
    while (want[i] == got[i]) ++i;  // memcmp found a difference: it stops there
    Check(first + i, want[i], got[i]);
    int64_t differ = 0;  // the rest counted without a branch per cell
    for (++i; i < n; ++i) differ += want[i] != got[i];
    m_.count += differ;
  }
  // got[0, n) against the constant v, element i at index first + i: memcmp against a block of
  // v (one for all the per-capacity tails, -1 or 0), the element loop only in a block that differs.
  template <typename T>
  void CheckConst(int64_t first, T v, const T* got, int64_t n) {
    constexpr int64_t kBlock = 512;
    T block[kBlock];
    std::fill_n(block, std::min(n, kBlock), v);
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t m = std::min(kBlock, n - i);
      if (std::memcmp(got + i, block, static_cast<size_t>(m) * sizeof(T)) == 0) continue;
      for (int64_t j = 0; j < m; ++j) Check(first + i + j, v, got[i + j]);
    }
  }
  int64_t count() const { return m_.count; }
  void AppendTo(std::vector<FieldMismatch>& out, MismatchKind kind) {
    if (m_.count == 0) return;
    m_.kind = kind;
    m_.builder = builder_;
    m_.field = field_ + suffix_;
    out.push_back(m_);
  }

 private:
  const std::string& builder_;
  const std::string& field_;
  const char* suffix_;
  FieldMismatch m_;
};

// One region: a single span when its rows are contiguous, else row by row; columns 1.. of the
// padding rows (SuiteRegion::padding_rows_from) go to `pad`. A region found equal is noted in
// `memo` (when given), so that the next implementation reading the same buffer skips it.
template <typename T>
void CompareRegion(const SuiteRegion& r, const T* want, const T* got, FieldDiff& diff, FieldDiff& pad,
                   CompareMemo* memo) {
  got += r.got_offset;
  if (r.rows <= 0 || r.cols <= 0) return;
  const CompareMemo::Key key{want, got, r.rows, r.cols, r.got_stride, static_cast<int64_t>(sizeof(T))};
  if (memo != nullptr && memo->KnownEqual(key)) return;
  const int64_t before = diff.count() + pad.count();
  if (r.got_stride == r.cols && r.padding_rows_from < 0) {
    const int64_t given = r.GivenCells();
    diff.CheckSpan(r.got_offset, want, got, given);
    diff.CheckConst(r.got_offset + given, static_cast<T>(r.tail), got + given, r.Cells() - given);
  } else {  // (a matrix: every cell given)
    for (int64_t row = 0; row < r.rows; ++row) {
      const T* w = want + row * r.cols;
      const T* g = got + row * r.got_stride;
      const int64_t at = r.got_offset + row * r.got_stride;
      if (r.padding_rows_from < 0 || row < r.padding_rows_from) {
        diff.CheckSpan(at, w, g, r.cols);
      } else {
        diff.Check(at, w[0], g[0]);
        pad.CheckSpan(at + 1, w + 1, g + 1, r.cols - 1);
      }
    }
  }
  if (memo != nullptr && diff.count() + pad.count() == before) memo->NoteEqual(key);
}

}  // namespace

std::vector<FieldMismatch> CompareSuite(Impl impl, const BatchInputs& in, const SuiteLayout& layout,
                                        const ModelConsts& consts, const SuiteOutputs& got) {
  return CompareSuite(impl, in, ComputeSuiteReference(in, layout, consts), layout, consts, got);
}

std::vector<FieldMismatch> CompareSuite(Impl impl, const BatchInputs& in, const SuiteReference& want,
                                        const SuiteLayout& layout, const ModelConsts& consts,
                                        const SuiteOutputs& got, CompareMemo* memo) {
  const ImplTraits& traits = impl.info().traits;
  const MismatchKind ordinary =
      traits.reads_host_boundaries && HostViewStale(in) ? MismatchKind::kStaleHost : MismatchKind::kBug;
  const MismatchKind padding = traits.old_indexer_chain ? MismatchKind::kPaddingResidue : MismatchKind::kBug;
  std::vector<FieldMismatch> out;
  std::vector<SuiteRegion> own;
  const auto make = [&] { return SuiteRegions(want, in, layout, consts); };
  if (memo == nullptr) own = make();
  for (const SuiteRegion& r : memo != nullptr ? memo->Regions(make) : own) {
    if (r.prefill_metadata && !traits.writes_prefill_metadata) continue;
    FieldDiff diff(r.builder, r.field), pad(r.builder, r.field, "_padding");
    if (r.int64_field)
      CompareRegion(r, r.want64, got.*(r.got64), diff, pad, memo);
    else
      CompareRegion(r, r.want32, r.k >= 0 ? got.indexer[r.k].*(r.got_indexer) : got.*(r.got32), diff, pad, memo);
    diff.AppendTo(out, ordinary);
    pad.AppendTo(out, padding);
  }
  return out;
}

// ---------------------------------------------------------------- implementation helpers

absl::Status ValidateSuiteStep(Impl impl, const SuiteStep& s) {
  if (s.in == nullptr) return absl::InvalidArgumentError("suite: no batch inputs");
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  DS_RETURN_IF_ERROR(ValidateBatchSizes(z));
  DS_RETURN_IF_ERROR(CheckFits(s.layout, z, s.consts));
  if (in.device.query_start_loc == nullptr || in.device.seq_lens == nullptr || in.device.block_table == nullptr ||
      in.device.slot_mapping == nullptr)
    return absl::InvalidArgumentError(
        "suite: device query_start_loc, seq_lens, block_table and slot_mapping must be non-null");
  const SuiteOutputs& o = s.out;
  if (o.token_to_req == nullptr || o.swa_lens == nullptr || o.swa_indices == nullptr ||
      o.swa_indices_noncausal == nullptr || o.swa_gather_lens == nullptr || o.mla_r1_slots == nullptr ||
      o.mla_r2_slots == nullptr || o.ring_slots == nullptr || o.seg_qsl == nullptr || o.seg_seq_lens == nullptr ||
      o.seg_count == nullptr || o.indexer_r2_slots == nullptr || o.indexer_r2_csl == nullptr)
    return absl::InvalidArgumentError("suite: an output buffer is null");
  for (const IndexerOutputs& x : o.indexer)
    if (x.seq_out == nullptr || x.bt_out == nullptr || x.decode_lens == nullptr || x.indices == nullptr ||
        x.per_req == nullptr || x.prefill_cu_seq_lens == nullptr || x.prefill_token_to_seq == nullptr ||
        x.prefill_ks == nullptr || x.prefill_ke == nullptr)
      return absl::InvalidArgumentError("suite: an indexer output buffer is null");
  if (s.arange == nullptr || s.layout.arange_len < std::max(z.capacity, s.consts.swa_window))
    return absl::InvalidArgumentError(absl::StrFormat(
        "suite: the persistent arange must hold max(capacity=%d, window=%d) entries (arange_len=%d)", z.capacity,
        s.consts.swa_window, s.layout.arange_len));
  const ImplTraits& traits = impl.info().traits;
  if (!traits.reads_host_boundaries && !traits.reads_host_totals) return absl::OkStatus();
  // Host-split readers read the host split and host seq_lens; host-total readers the totals.
  const int32_t* hq = in.host.query_start_loc;
  if (hq == nullptr) return absl::InvalidArgumentError("suite: host query_start_loc is null");
  if ((traits.reads_host_boundaries || z.num_reqs > z.num_decodes) && in.host.seq_lens == nullptr)
    return absl::InvalidArgumentError("suite: host seq_lens is null");
  if (hq[0] != 0)
    return absl::InvalidArgumentError(absl::StrFormat("suite: host query_start_loc[0]=%d, expected 0", hq[0]));
  for (int32_t r = 0; r < z.num_reqs; ++r)
    if (hq[r + 1] < hq[r])
      return absl::InvalidArgumentError(
          absl::StrFormat("suite: host query_start_loc decreases at %d (%d -> %d)", r + 1, hq[r], hq[r + 1]));
  if (hq[z.num_reqs] > z.num_tokens)
    return absl::OutOfRangeError(absl::StrFormat("suite: host token total %d exceeds num_tokens=%d",
                                                 hq[z.num_reqs], z.num_tokens));
  if (hq[z.num_decodes] > z.num_decode_tokens)
    return absl::OutOfRangeError(absl::StrFormat("suite: host decode token total %d exceeds num_decode_tokens=%d",
                                                 hq[z.num_decodes], z.num_decode_tokens));
  return absl::OkStatus();
}

FusedSuiteParams MakeFusedSuiteParams(const SuiteStep& s) {
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  const SuiteOutputs& o = s.out;
  FusedSuiteParams p{};
  p.query_start_loc = in.device.query_start_loc;
  p.seq_lens = in.device.seq_lens;
  p.slot_mapping = in.device.slot_mapping;
  p.block_table = in.device.block_table;
  p.num_reqs = z.num_reqs;
  p.num_tokens = z.num_tokens;
  p.num_decodes = z.num_decodes;
  p.num_decode_tokens = z.num_decode_tokens;
  p.capacity = z.capacity;
  p.bt_width = z.bt_width;
  p.bt_stride = z.bt_stride;
  p.out_stride = s.layout.bt_out_stride;
  p.max_segments = s.layout.max_segments;
  p.window = s.consts.swa_window;
  p.swa_block_size = s.consts.swa_block_size;
  p.mla_block_size = s.consts.mla_block_size;
  p.ring_capacity = CompressorRingCapacity(s.consts.spec_k);
  p.segment_len = s.consts.prefill_segment;
  p.fp8 = in.fp8_prefill ? 1 : 0;
  p.swa_noncausal_width = in.causal ? 0 : s.layout.noncausal_width;
  p.swa_indices_nc = o.swa_indices_noncausal;
  p.token_to_req = o.token_to_req;
  p.swa_lens = o.swa_lens;
  p.swa_indices = o.swa_indices;
  p.mla_out[0] = o.mla_r1_slots;
  p.mla_out[1] = o.mla_r2_slots;
  p.ring_out = o.ring_slots;
  p.seg_qsl = o.seg_qsl;
  p.seg_seq_lens = o.seg_seq_lens;
  p.seg_count = o.seg_count;
  p.r2_slots = o.indexer_r2_slots;
  p.r2_csl = o.indexer_r2_csl;
  for (int k = 0; k < 2; ++k) {
    p.seq_out[k] = o.indexer[k].seq_out;
    p.bt_out[k] = o.indexer[k].bt_out;
    p.decode_lens[k] = o.indexer[k].decode_lens;
    p.indices[k] = o.indexer[k].indices;
    p.per_req[k] = o.indexer[k].per_req;
  }
  PlanFusedSuiteGrid(p);
  return p;
}

// ---------------------------------------------------------------- CpuSuite

namespace {
constexpr int32_t kPoison = -99;
// Requests the first layout holds at least (an engine's max_num_seqs); more re-allocate.
constexpr int32_t kMinCpuMaxReqs = 256;
size_t Slot(Impl impl) { return impl.index(); }
}  // namespace

absl::Status RunSuite(CpuBackend& be, Impl impl, const SuiteStep& s) {
  DS_RETURN_IF_ERROR(ValidateSuiteStep(impl, s));
  return impl.info().cpu(be, s);
}

struct CpuSuite::State {
  ModelConsts consts;
  SuiteLayout layout;
  std::vector<int32_t> arange;
  // By Impl::index(): each implementation's own buffers, its backend (so that distinct
  // implementations may run concurrently), and where its outputs were in its last run.
  std::vector<std::optional<SuiteImage>> buffers = std::vector<std::optional<SuiteImage>>(NumImpls());
  std::vector<std::unique_ptr<CpuBackend>> backends = std::vector<std::unique_ptr<CpuBackend>>(NumImpls());
  std::vector<SuiteOutputs> effective = std::vector<SuiteOutputs>(NumImpls());
  // Dedup: the memo, its implementations, the step begun (inputs, reference) and the runs in it.
  std::unique_ptr<BuilderMemo> memo;
  std::vector<Impl> dedup_impls;
  const BatchInputs* step_in = nullptr;
  const SuiteReference* step_want = nullptr;
  std::vector<int32_t> runs_in_step = std::vector<int32_t>(NumImpls(), 0);
  bool step_begun = false;
  int32_t last_decode_tokens = 0;  // N_d of the step begun last
};

CpuSuite::CpuSuite(const ModelConsts& consts) : state_(std::make_unique<State>()) { state_->consts = consts; }
CpuSuite::~CpuSuite() = default;

SuiteLayout CpuSuite::layout() const { return state_->layout; }

absl::StatusOr<SuiteImage> CpuSuite::Image(Impl impl) const {
  const State& st = *state_;
  const auto& b = st.buffers[Slot(impl)];
  if (!b.has_value())
    return absl::FailedPreconditionError(absl::StrCat("CpuSuite: impl ", std::string(ImplName(impl)), " has not run yet"));
  if (st.memo == nullptr) return *b;
  // The fields of shared builders: where the last run left them.
  SuiteImage image = *b;
  const SuiteOutputs& e = st.effective[Slot(impl)];
  const auto copy = [](auto* src, auto& dst) { std::copy(src, src + dst.size(), dst.begin()); };
  copy(e.swa_lens, image.swa_lens);
  copy(e.swa_indices, image.swa_indices);
  copy(e.swa_indices_noncausal, image.swa_indices_noncausal);
  copy(e.swa_gather_lens, image.swa_gather_lens);
  copy(e.mla_r2_slots, image.mla_r2_slots);
  copy(e.ring_slots, image.ring_slots);
  for (int k = 0; k < 2; ++k) {
    copy(e.indexer[k].seq_out, image.indexer[k].seq_out);
    // Rows [0, N_d) of the last step: the shared buffer may hold more or fewer rows than this one.
    const size_t bt = std::min(image.indexer[k].bt_out.size(),
                               static_cast<size_t>(st.last_decode_tokens) * static_cast<size_t>(st.layout.bt_out_stride));
    std::copy(e.indexer[k].bt_out, e.indexer[k].bt_out + bt, image.indexer[k].bt_out.begin());
    copy(e.indexer[k].decode_lens, image.indexer[k].decode_lens);
    copy(e.indexer[k].indices, image.indexer[k].indices);
    copy(e.indexer[k].per_req, image.indexer[k].per_req);
    copy(e.indexer[k].prefill_cu_seq_lens, image.indexer[k].prefill_cu_seq_lens);
    copy(e.indexer[k].prefill_token_to_seq, image.indexer[k].prefill_token_to_seq);
    copy(e.indexer[k].prefill_ks, image.indexer[k].prefill_ks);
    copy(e.indexer[k].prefill_ke, image.indexer[k].prefill_ke);
  }
  copy(e.indexer_r2_slots, image.indexer_r2_slots);
  copy(e.indexer_r2_csl, image.indexer_r2_csl);
  copy(e.seg_qsl, image.seg_qsl);
  copy(e.seg_seq_lens, image.seg_seq_lens);
  copy(e.seg_count, image.seg_count);
  return image;
}

absl::StatusOr<SuiteRunResult> CpuSuite::Run(Impl impl, const BatchInputs& in) { return Run(impl, in, nullptr); }

absl::Status CpuSuite::Prepare(const BatchSizes& z) {
  State& st = *state_;
  DS_RETURN_IF_ERROR(ValidateBatchSizes(z));
  if (st.layout.token_capacity == 0 || !CheckFits(st.layout, z, st.consts).ok()) {
    st.layout = MakeSuiteLayout(std::max(z.capacity, st.layout.token_capacity),
                                std::max({z.num_reqs, kMinCpuMaxReqs, st.layout.max_reqs}),
                                std::max(z.bt_stride, st.layout.bt_out_stride), st.consts);
    st.arange.resize(static_cast<size_t>(st.layout.arange_len));
    std::iota(st.arange.begin(), st.arange.end(), 0);
    for (auto& b : st.buffers) b.reset();
    for (auto& be : st.backends) be.reset();
    if (st.memo != nullptr) st.memo->SetLayout(st.layout, kPoison);
  }
  return absl::OkStatus();
}

void CpuSuite::EnableDedup(std::vector<Impl> impls) {
  State& st = *state_;
  st.memo = std::make_unique<BuilderMemo>();
  st.memo->SetLayout(st.layout, kPoison);
  st.dedup_impls = std::move(impls);
  st.step_begun = false;
}

absl::Status CpuSuite::BeginStep(const BatchInputs& in, const SuiteReference& want) {
  DS_RETURN_IF_ERROR(BeginStep(in, want.token_to_req));
  state_->step_want = &want;
  return absl::OkStatus();
}

absl::Status CpuSuite::BeginStep(const BatchInputs& in, const std::vector<int32_t>& token_to_req) {
  State& st = *state_;
  if (st.memo == nullptr) return absl::FailedPreconditionError("CpuSuite::BeginStep: dedup is not enabled");
  // Shared buffers hold every sharer's history only if each ran every step.
  if (st.step_begun)
    for (Impl impl : st.dedup_impls)
      if (st.runs_in_step[Slot(impl)] != 1)
        return absl::FailedPreconditionError(absl::StrFormat(
            "CpuSuite: with dedup every implementation runs once per step; %s ran %d times in the last one",
            ImplName(impl), st.runs_in_step[Slot(impl)]));
  DS_RETURN_IF_ERROR(Prepare(in.sizes));
  std::fill(st.runs_in_step.begin(), st.runs_in_step.end(), 0);
  st.step_in = &in;
  st.step_want = nullptr;
  st.step_begun = true;
  st.last_decode_tokens = in.sizes.num_decode_tokens;
  // The device truth's map over [0, qsl[R]): what the SWA and ring kernels read of a map.
  const int32_t mapped = std::clamp(in.device.query_start_loc[in.sizes.num_reqs], 0,
                                    static_cast<int32_t>(token_to_req.size()));
  st.memo->BeginStep(token_to_req.data(), mapped);
  return absl::OkStatus();
}

absl::StatusOr<SuiteRunResult> CpuSuite::Run(Impl impl, const BatchInputs& in, const SuiteReference* want) {
  State& st = *state_;
  if (st.memo != nullptr && st.step_want != want)
    return absl::FailedPreconditionError("CpuSuite: with dedup, Run(impl, in, &want) follows BeginStep(in, want)");
  SuiteRunResult result;
  DS_ASSIGN_OR_RETURN(result.counters, Emulate(impl, in));
  result.mismatches = want != nullptr ? Compare(impl, in, *want)
                                      : CompareSuite(impl, in, st.layout, st.consts, st.effective[Slot(impl)]);
  return result;
}

absl::StatusOr<OpCounters> CpuSuite::Emulate(Impl impl, const BatchInputs& in) {
  State& st = *state_;
  BuilderMemo* memo = st.memo.get();
  if (memo != nullptr) {
    if (!st.step_begun || st.step_in != &in)
      return absl::FailedPreconditionError("CpuSuite: with dedup, a run of `in` follows BeginStep(in, ...)");
    if (std::find(st.dedup_impls.begin(), st.dedup_impls.end(), impl) == st.dedup_impls.end())
      return absl::FailedPreconditionError(
          absl::StrCat("CpuSuite: impl ", std::string(ImplName(impl)), " is not one of the deduplicated set"));
    ++st.runs_in_step[Slot(impl)];
  } else {
    DS_RETURN_IF_ERROR(Prepare(in.sizes));
  }
  auto& buffers = st.buffers[Slot(impl)];
  // bt_out rows as the steps need them (kernels/suite/bt_rows.h).
  if (!buffers.has_value()) buffers = FilledWithOneBtRow(st.layout, kPoison);
  GrowBtRows(&*buffers, in.sizes.num_decode_tokens, st.layout.bt_out_stride, kPoison);
  std::unique_ptr<CpuBackend>& backend = st.backends[Slot(impl)];
  if (backend == nullptr || !backend->status().ok()) backend = std::make_unique<CpuBackend>(MaxWorkspaceBytes(st.layout));
  CpuBackend& be = *backend;
  be.counters() = OpCounters{};
  be.ResetScratch();

  SuiteStep step;
  step.in = &in;
  step.layout = st.layout;
  step.consts = st.consts;
  step.out = buffers->View();
  step.arange = st.arange.data();
  SuiteOutputs& effective = st.effective[Slot(impl)];
  effective = step.out;
  step.memo = BuilderMemoSession{memo, &effective};
  DS_RETURN_IF_ERROR(RunSuite(be, impl, step));
  return be.counters();
}

std::vector<FieldMismatch> CpuSuite::Compare(Impl impl, const BatchInputs& in, const SuiteReference& want) {
  State& st = *state_;
  BuilderMemo* memo = st.memo.get();
  return CompareSuite(impl, in, want, st.layout, st.consts, st.effective[Slot(impl)],
                      memo != nullptr ? &memo->compare() : nullptr);
}

}  // namespace dspark
