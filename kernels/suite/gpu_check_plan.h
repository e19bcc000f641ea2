// The host side of the GPU executor's region check (kernels/suite/gpu_check.cuh), no CUDA here:
//   - the want pack: every defined region's reference cells (kernels/suite/regions.h), dense
//     row-major, one 16-byte aligned block per region, uploaded with one copy per step. A
//     region's constant tail (the per-capacity fields past the step's tokens) is not packed: the
//     task carries its value.
//   - the compare tasks: one per (implementation, region), what the device compare and its CPU
//     reference (kernels/reference/region_compare.h) read;
//   - the host mirror: where a region's count is non-zero, the spans CompareSuite reads of that
//     implementation's buffers are downloaded into a host arena laid out so that CompareSuite,
//     run on the mirror's SuiteOutputs, reads exactly the cells it reads on whole buffers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/reference/region_compare.h"
#include "kernels/suite/regions.h"
#include "kernels/suite/suite.h"

namespace dspark {

inline constexpr uint64_t kCheckPackAlign = 16;  // [bytes] every packed block starts aligned
inline constexpr int kMaxSuiteRegions = 32;      // SuiteRegions lists at most 22 today

struct PackedWant {
  uint64_t offset = 0;      // [bytes] into the pack
  int64_t dense_cells = 0;  // cells [0, dense_cells) are packed
  int64_t tail = 0;         // the value of every cell from dense_cells on
};
struct WantPack {
  std::vector<PackedWant> regions;  // parallel to the regions
  uint64_t bytes = 0;
};
WantPack PlanWantPack(const std::vector<SuiteRegion>& regions);
// Writes the packed cells into dst[0, pack.bytes).
void WriteWantPack(const std::vector<SuiteRegion>& regions, const WantPack& pack, uint8_t* dst);

// [bytes] bound on a host mirror of any step of `layout`: the mirror holds each buffer a region
// reads once, so one implementation's output set plus the alignment of each block.
uint64_t MaxRegionCheckBytes(const SuiteLayout& layout);
// [bytes] bound on a want pack of any step of `layout`: a region's cells never exceed its buffer,
// and a buffer is read by at most two regions (DeepSeek-V4's indexer fields, one region for each
// indexer path: the native one of (a) and (b), the varlen one of (c)), so two output sets plus the
// alignment of each block.
uint64_t MaxWantPackBytes(const SuiteLayout& layout);

// [elements] of a region's buffer that CompareSuite reads: [first, first + count).
struct RegionSpan {
  int64_t first = 0, count = 0;
};
RegionSpan SpanOf(const SuiteRegion& r);
// The first cell of the region's buffer in `out`, and setting it.
const void* RegionBuffer(const SuiteRegion& r, const SuiteOutputs& out);
void SetRegionBuffer(const SuiteRegion& r, SuiteOutputs& out, void* buffer);
inline int64_t ElemBytes(const SuiteRegion& r) { return r.int64_field ? 8 : 4; }

// One task per region of `got` (an implementation's buffers, in the compare's memory), the
// reference read at want_base + the region's pack offset. A region the implementation does not
// write (RegionApplies false, which CompareSuite skips too) gets a task of no cells.
std::vector<RegionCompareTask> PlanCompareTasks(const std::vector<SuiteRegion>& regions, const WantPack& pack,
                                                const uint8_t* want_base, const SuiteOutputs& got,
                                                const ImplTraits& traits, const ModelConsts& consts);

// Copies of the regions' spans from `src` (an implementation's buffers) into a host arena at
// `mirror` (at least MaxRegionCheckBytes), and the SuiteOutputs that CompareSuite reads there.
// Buffers no region reads point at the arena's base (never read). Only the regions the
// implementation defines (RegionApplies under `traits` and `consts`) are mirrored: a region of
// the other indexer path reads the same buffer, and its reference cells must not be written over
// the ones this implementation's compare reads. With `counts` (the device
// compare's, 2 per region), a region whose counts are both zero is not downloaded: its cells
// equal the reference's, which WriteMirrorFills writes in its place (row by row at the buffer's
// stride), so CompareSuite finds on the mirror exactly what it finds on the device's buffers.
struct MirrorCopy {
  const void* src = nullptr;
  void* dst = nullptr;
  uint64_t bytes = 0;
};
struct MirrorPlan {
  std::vector<MirrorCopy> copies;
  std::vector<size_t> fills;  // regions written from the reference
  uint64_t bytes = 0;         // [bytes] of the arena used
  SuiteOutputs view;
};
MirrorPlan PlanMirror(const std::vector<SuiteRegion>& regions, const SuiteOutputs& src, uint8_t* mirror,
                      const ImplTraits& traits, const ModelConsts& consts, const int64_t* counts = nullptr);
void WriteMirrorFills(const std::vector<SuiteRegion>& regions, const MirrorPlan& plan);

// Differing cells by "builder.field" ("builder.field_padding" for the padding columns), zero
// counts left out: from one implementation's task counts (2 per region, in region order) and
// from CompareSuite's mismatches; equal when the two compares agree.
std::map<std::string, int64_t> CountsByField(const std::vector<SuiteRegion>& regions, const int64_t* counts);
std::map<std::string, int64_t> CountsByField(const std::vector<FieldMismatch>& mismatches);

}  // namespace dspark
