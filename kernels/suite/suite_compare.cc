// The exact check of a suite run: the CPU reference built from device truth, and the
// region-by-region comparison that classifies every difference (kernels/suite/suite.h).
#include "kernels/suite/suite.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/common/clean_pages.h"
#include "kernels/reference/compressed_slots.h"
#include "kernels/reference/ring_slots.h"
#include "kernels/reference/swa_noncausal.h"
#include "kernels/reference/swa_prefill.h"
#include "kernels/reference/token_map.h"
#include "kernels/suite/builder_memo.h"
#include "kernels/suite/regions.h"

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
  if (consts.model == ModelKind::kV4) {  // DeepSeek-V4's own builders from here on
    FillSuiteReferenceV4(in, layout, consts, &r);
    return r;
  }
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
  // CheckConst over the cells not on a page that is clean with v (kernels/common/clean_pages.h:
  // compared equal to v before and not written since); every run of cells found equal has its
  // whole pages marked clean. The same differences, first index and count as CheckConst.
  template <typename T>
  void CheckConstTracked(int64_t first, T v, const T* got, int64_t n) {
    clean_pages::ForEachUnknown(got, n, v, [&](int64_t b, int64_t e) {
      const int64_t before = m_.count;
      CheckConst(first + b, v, got + b, e - b);
      if (m_.count == before) clean_pages::NoteEqual(const_cast<T*>(got), b, e, v);
    });
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
// `memo` (when given; `index`: the region's in memo->Regions()), so that the next implementation
// reading the same buffer skips it.
template <typename T>
void CompareRegion(const SuiteRegion& r, const T* want, const T* got, FieldDiff& diff, FieldDiff& pad,
                   CompareMemo* memo, size_t index) {
  got += r.got_offset;
  if (r.rows <= 0 || r.cols <= 0) return;
  if (memo != nullptr && memo->KnownEqual(index, got)) return;
  const int64_t before = diff.count() + pad.count();
  if (r.got_stride == r.cols && r.padding_rows_from < 0) {
    const int64_t given = r.GivenCells();
    diff.CheckSpan(r.got_offset, want, got, given);
    if (memo != nullptr && memo->tracks_tails())
      diff.CheckConstTracked(r.got_offset + given, static_cast<T>(r.tail), got + given, r.Cells() - given);
    else
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
  if (memo != nullptr && diff.count() + pad.count() == before) memo->NoteEqual(index, got);
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
  const std::vector<SuiteRegion>& regions = memo != nullptr ? memo->Regions(make) : own;
  for (size_t i = 0; i < regions.size(); ++i) {
    const SuiteRegion& r = regions[i];
    if (!RegionApplies(r, traits, consts)) continue;
    FieldDiff diff(r.builder, r.field), pad(r.builder, r.field, "_padding");
    if (r.int64_field)
      CompareRegion(r, r.want64, got.*(r.got64), diff, pad, memo, i);
    else
      CompareRegion(r, r.want32, r.k >= 0 ? got.indexer[r.k].*(r.got_indexer) : got.*(r.got32), diff, pad, memo, i);
    diff.AppendTo(out, ordinary);
    pad.AppendTo(out, padding);
  }
  return out;
}

}  // namespace dspark
