#include "kernels/suite/gpu_check_plan.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/common/byte_math.h"
#include "kernels/suite/gpu_memory_plan.h"

namespace dspark {
namespace {

uint64_t AlignUp(uint64_t v) { return (v + kCheckPackAlign - 1) / kCheckPackAlign * kCheckPackAlign; }

// The length of the region's reference less its longest suffix equal to its last cell (`tail`):
// the cells from GivenCells() on are r.tail already (not stored); the stored ones are tested in
// blocks of 64 cells branch-free first.
template <class T>
int64_t DenseCells(const SuiteRegion& r, const T* w, int64_t& tail) {
  const int64_t cells = std::max<int64_t>(r.Cells(), 0);
  if (cells <= 0) return 0;
  int64_t d = r.GivenCells();
  if (d <= 0) {
    tail = r.tail;
    return 0;
  }
  const T t = d < cells ? static_cast<T>(r.tail) : w[cells - 1];
  tail = t;
  constexpr int64_t kBlock = 64;
  using U = std::make_unsigned_t<T>;
  while (d >= kBlock) {
    const T* b = w + d - kBlock;
    U differ = 0;
    for (int i = 0; i < kBlock; ++i) differ |= static_cast<U>(b[i]) ^ static_cast<U>(t);
    if (differ != 0) break;
    d -= kBlock;
  }
  while (d > 0 && w[d - 1] == t) --d;
  return d;
}

}  // namespace

WantPack PlanWantPack(const std::vector<SuiteRegion>& regions) {
  WantPack pack;
  for (const SuiteRegion& r : regions) {
    PackedWant p;
    const int64_t dense = r.int64_field ? DenseCells(r, r.want64, p.tail) : DenseCells(r, r.want32, p.tail);
    p.dense_cells = dense;
    p.offset = pack.bytes;
    pack.bytes = AlignUp(pack.bytes + static_cast<uint64_t>(dense * ElemBytes(r)));
    pack.regions.push_back(p);
  }
  return pack;
}

void WriteWantPack(const std::vector<SuiteRegion>& regions, const WantPack& pack, uint8_t* dst) {
  for (size_t i = 0; i < regions.size(); ++i) {
    const SuiteRegion& r = regions[i];
    const PackedWant& p = pack.regions[i];
    if (p.dense_cells == 0) continue;
    const void* src = r.int64_field ? static_cast<const void*>(r.want64) : static_cast<const void*>(r.want32);
    std::memcpy(dst + p.offset, src, static_cast<size_t>(p.dense_cells * ElemBytes(r)));
  }
}

uint64_t MaxRegionCheckBytes(const SuiteLayout& layout) {
  return SatAdd(GpuSuiteOutputSetBytes(layout), kMaxSuiteRegions * kCheckPackAlign);
}

uint64_t MaxWantPackBytes(const SuiteLayout& layout) {
  return SatAdd(SatMul(2, GpuSuiteOutputSetBytes(layout)), kMaxSuiteRegions * kCheckPackAlign);
}

RegionSpan SpanOf(const SuiteRegion& r) {
  RegionSpan s;
  s.first = r.got_offset;
  if (r.rows > 0 && r.cols > 0) s.count = (r.rows - 1) * r.got_stride + r.cols;
  return s;
}

const void* RegionBuffer(const SuiteRegion& r, const SuiteOutputs& out) {
  if (r.int64_field) return out.*(r.got64);
  return r.k >= 0 ? out.indexer[r.k].*(r.got_indexer) : out.*(r.got32);
}

void SetRegionBuffer(const SuiteRegion& r, SuiteOutputs& out, void* buffer) {
  if (r.int64_field) out.*(r.got64) = static_cast<int64_t*>(buffer);
  else if (r.k >= 0) out.indexer[r.k].*(r.got_indexer) = static_cast<int32_t*>(buffer);
  else out.*(r.got32) = static_cast<int32_t*>(buffer);
}

std::vector<RegionCompareTask> PlanCompareTasks(const std::vector<SuiteRegion>& regions, const WantPack& pack,
                                                const uint8_t* want_base, const SuiteOutputs& got,
                                                const ImplTraits& traits, const ModelConsts& consts) {
  std::vector<RegionCompareTask> tasks;
  tasks.reserve(regions.size());
  for (size_t i = 0; i < regions.size(); ++i) {
    const SuiteRegion& r = regions[i];
    RegionCompareTask t;
    t.want = want_base + pack.regions[i].offset;
    t.got = static_cast<const uint8_t*>(RegionBuffer(r, got)) + r.got_offset * ElemBytes(r);
    t.rows = r.cols > 0 && RegionApplies(r, traits, consts) ? r.rows : 0;
    t.cols = r.cols;
    t.got_stride = r.got_stride;
    t.padding_rows_from = r.padding_rows_from;
    t.dense_cells = pack.regions[i].dense_cells;
    t.tail = pack.regions[i].tail;
    t.elem_bytes = static_cast<int32_t>(ElemBytes(r));
    tasks.push_back(t);
  }
  return tasks;
}

MirrorPlan PlanMirror(const std::vector<SuiteRegion>& regions, const SuiteOutputs& src, uint8_t* mirror,
                      const ImplTraits& traits, const ModelConsts& consts, const int64_t* counts) {
  // The arena holds each buffer a region reads from its cell 0 to the last cell any of its
  // regions reads, so an offset into the buffer is the same offset into the mirror's.
  std::map<const void*, int64_t> end_bytes;
  for (const SuiteRegion& r : regions) {
    if (!RegionApplies(r, traits, consts)) continue;
    const RegionSpan s = SpanOf(r);
    int64_t& end = end_bytes[RegionBuffer(r, src)];
    end = std::max(end, (s.first + s.count) * ElemBytes(r));
  }
  MirrorPlan plan;
  std::map<const void*, uint8_t*> host_of;
  for (const auto& [buffer, end] : end_bytes) {
    host_of[buffer] = mirror + plan.bytes;
    plan.bytes = AlignUp(plan.bytes + static_cast<uint64_t>(end));
  }
  SuiteOutputs& v = plan.view;
  for (int32_t** p : {&v.token_to_req, &v.swa_lens, &v.swa_indices, &v.swa_indices_noncausal, &v.indexer_r2_csl,
                      &v.seg_qsl, &v.seg_seq_lens, &v.seg_count})
    *p = reinterpret_cast<int32_t*>(mirror);
  for (int64_t** p : {&v.mla_r1_slots, &v.mla_r2_slots, &v.ring_slots, &v.indexer_r2_slots})
    *p = reinterpret_cast<int64_t*>(mirror);
  for (IndexerOutputs& x : v.indexer)
    for (int32_t** p : {&x.seq_out, &x.bt_out, &x.decode_lens, &x.indices, &x.per_req})
      *p = reinterpret_cast<int32_t*>(mirror);
  for (size_t i = 0; i < regions.size(); ++i) {
    const SuiteRegion& r = regions[i];
    if (!RegionApplies(r, traits, consts)) continue;
    const void* buffer = RegionBuffer(r, src);
    uint8_t* host = host_of[buffer];
    SetRegionBuffer(r, v, host);
    const RegionSpan s = SpanOf(r);
    if (s.count <= 0) continue;
    if (counts != nullptr && counts[2 * i] == 0 && counts[2 * i + 1] == 0) {
      plan.fills.push_back(i);
      continue;
    }
    const int64_t e = ElemBytes(r);
    plan.copies.push_back(MirrorCopy{static_cast<const uint8_t*>(buffer) + s.first * e, host + s.first * e,
                                     static_cast<uint64_t>(s.count * e)});
  }
  return plan;
}

void WriteMirrorFills(const std::vector<SuiteRegion>& regions, const MirrorPlan& plan) {
  for (size_t i : plan.fills) {
    const SuiteRegion& r = regions[i];
    const int64_t e = ElemBytes(r);
    auto* dst = static_cast<uint8_t*>(const_cast<void*>(RegionBuffer(r, plan.view))) + r.got_offset * e;
    const auto* want = r.int64_field ? reinterpret_cast<const uint8_t*>(r.want64)
                                     : reinterpret_cast<const uint8_t*>(r.want32);
    if (r.got_stride == r.cols) {  // the stored cells, then the tail (SuiteRegion::tail)
      const int64_t given = r.GivenCells();
      std::memcpy(dst, want, static_cast<size_t>(given * e));
      if (r.int64_field)
        std::fill_n(reinterpret_cast<int64_t*>(dst) + given, r.Cells() - given, r.tail);
      else
        std::fill_n(reinterpret_cast<int32_t*>(dst) + given, r.Cells() - given, static_cast<int32_t>(r.tail));
      continue;
    }
    for (int64_t row = 0; row < r.rows; ++row)
      std::memcpy(dst + row * r.got_stride * e, want + row * r.cols * e, static_cast<size_t>(r.cols * e));
  }
}

std::map<std::string, int64_t> CountsByField(const std::vector<SuiteRegion>& regions, const int64_t* counts) {
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i < regions.size(); ++i) {
    const std::string key = regions[i].builder + "." + regions[i].field;
    if (counts[2 * i] != 0) out[key] += counts[2 * i];
    if (counts[2 * i + 1] != 0) out[key + "_padding"] += counts[2 * i + 1];
  }
  return out;
}

std::map<std::string, int64_t> CountsByField(const std::vector<FieldMismatch>& mismatches) {
  std::map<std::string, int64_t> out;
  for (const FieldMismatch& m : mismatches)
    if (m.count != 0) out[m.builder + "." + m.field] += m.count;
  return out;
}

}  // namespace dspark
