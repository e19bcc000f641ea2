// The host side of the GPU executor's region check (kernels/suite/gpu_check_plan.h), on the CPU:
// on randomized steps of the eight cases with differences planted in defined cells (padding
// columns included),
//   - the device compare's CPU reference (kernels/reference/region_compare.h), run over the
//     planned tasks and want pack, counts what CompareSuite counts, field by field;
//   - CompareSuite on the host mirror (only the planned spans copied, every other cell poison)
//     returns exactly what it returns on the whole buffers, so the spans hold every cell it reads;
//   - the pack round-trips every reference cell (dense part and constant tail), and pack and
//     mirror stay within MaxWantPackBytes and MaxRegionCheckBytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/byte_math.h"
#include "kernels/reference/region_compare.h"
#include "kernels/suite/gpu_check_plan.h"
#include "kernels/suite/gpu_memory_plan.h"
#include "kernels/suite/regions.h"
#include "kernels/suite/suite.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::RandomizedCases;
using suite_test::SuiteCaseParam;

// Adds 1..5 to `n` random cells of random regions of `image`; every third one in a padding
// column where the region has padding rows.
void PlantDifferences(const std::vector<SuiteRegion>& regions, SuiteOutputs view, int n, std::mt19937_64& rng) {
  std::vector<size_t> live;
  for (size_t i = 0; i < regions.size(); ++i)
    if (regions[i].Cells() > 0) live.push_back(i);
  if (live.empty()) return;
  for (int p = 0; p < n; ++p) {
    const SuiteRegion& r = regions[live[rng() % live.size()]];
    int64_t row = static_cast<int64_t>(rng() % static_cast<uint64_t>(r.rows));
    int64_t col = static_cast<int64_t>(rng() % static_cast<uint64_t>(r.cols));
    if (p % 3 == 2 && r.padding_rows_from >= 0 && r.padding_rows_from < r.rows && r.cols > 1) {
      row = r.padding_rows_from + static_cast<int64_t>(rng() % static_cast<uint64_t>(r.rows - r.padding_rows_from));
      col = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(r.cols - 1));
    }
    const int64_t at = r.got_offset + row * r.got_stride + col;
    const int64_t delta = 1 + static_cast<int64_t>(rng() % 5);
    void* buffer = const_cast<void*>(RegionBuffer(r, view));
    if (r.int64_field) static_cast<int64_t*>(buffer)[at] += delta;
    else static_cast<int32_t*>(buffer)[at] += static_cast<int32_t>(delta);
  }
}

class GpuCheckPlan : public ::testing::TestWithParam<SuiteCaseParam> {};

TEST_P(GpuCheckPlan, ReferenceCountsAndMirrorMatchCompareSuite) {
  const SuiteCaseParam& p = GetParam();
  std::mt19937_64 rng(p.options.seed * 1000003 + static_cast<uint64_t>(p.seed_case));
  for (ModelKind model : {ModelKind::kV41, ModelKind::kV4})
  for (Impl impl : ImplsOfModel(model)) {
    SCOPED_TRACE(std::string(ImplName(impl)));
    const ModelConsts consts = ModelConstsFor(model);
    CaseOptions options = p.options;
    options.consts = consts;
    const CaseBatch b = MustMake(p.seed_case, options);
    const BatchInputs in = b.Inputs();
    CpuSuite suite(consts);
    ASSERT_TRUE(suite.Run(impl, in).ok());
    absl::StatusOr<SuiteImage> image = suite.Image(impl);
    ASSERT_TRUE(image.ok()) << image.status();
    const SuiteLayout layout = suite.layout();
    const SuiteReference want = ComputeSuiteReference(in, layout, consts);
    const std::vector<SuiteRegion> regions = SuiteRegions(want, in, layout, consts);
    ASSERT_LE(regions.size(), static_cast<size_t>(kMaxSuiteRegions));
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      if (round > 0) PlantDifferences(regions, image->View(), 1 + round * 6, rng);
      const SuiteOutputs view = image->View();
      const std::vector<FieldMismatch> cpu = CompareSuite(impl, in, want, layout, consts, view);

      const WantPack pack = PlanWantPack(regions);
      ASSERT_LE(pack.bytes, MaxWantPackBytes(layout));
      std::vector<uint8_t> packed(pack.bytes + 1, 0xEE);
      WriteWantPack(regions, pack, packed.data());
      const std::vector<RegionCompareTask> tasks = PlanCompareTasks(regions, pack, packed.data(), view, impl.info().traits, consts);
      const std::vector<int64_t> counts = ref::CountRegionMismatches(tasks);
      EXPECT_EQ(CountsByField(regions, counts.data()), CountsByField(cpu)) << DescribeMismatches(cpu);
      if (round > 0) EXPECT_FALSE(cpu.empty());

      std::vector<uint8_t> arena(MaxRegionCheckBytes(layout), 0x5A);
      const MirrorPlan mirror = PlanMirror(regions, view, arena.data(), impl.info().traits, consts);
      ASSERT_LE(mirror.bytes, arena.size());
      for (const MirrorCopy& c : mirror.copies) std::memcpy(c.dst, c.src, c.bytes);
      EXPECT_EQ(DescribeMismatches(CompareSuite(impl, in, want, layout, consts, mirror.view)),
                DescribeMismatches(cpu));
      EXPECT_TRUE(mirror.fills.empty());

      // With the counts, equal regions are written from the reference instead of copied.
      std::fill(arena.begin(), arena.end(), 0xA5);
      const MirrorPlan partial = PlanMirror(regions, view, arena.data(), impl.info().traits, consts, counts.data());
      EXPECT_EQ(partial.bytes, mirror.bytes);
      for (const MirrorCopy& c : partial.copies) std::memcpy(c.dst, c.src, c.bytes);
      WriteMirrorFills(regions, partial);
      EXPECT_EQ(DescribeMismatches(CompareSuite(impl, in, want, layout, consts, partial.view)),
                DescribeMismatches(cpu));
      if (cpu.empty()) EXPECT_TRUE(partial.copies.empty());
    }
  }
}

TEST_P(GpuCheckPlan, PackRoundTripsEveryReferenceCell) {
  const SuiteCaseParam& p = GetParam();
  const CaseBatch b = MustMake(p.seed_case, p.options);
  const BatchInputs in = b.Inputs();
  const ModelConsts consts;
  CpuSuite suite(consts);
  ASSERT_TRUE(suite.Prepare(in.sizes).ok());
  const SuiteLayout layout = suite.layout();
  const SuiteReference want = ComputeSuiteReference(in, layout, consts);
  const std::vector<SuiteRegion> regions = SuiteRegions(want, in, layout, consts);
  const WantPack pack = PlanWantPack(regions);
  std::vector<uint8_t> packed(pack.bytes + 1, 0);
  WriteWantPack(regions, pack, packed.data());
  int64_t packed_cells = 0, cells = 0;
  for (size_t i = 0; i < regions.size(); ++i) {
    const SuiteRegion& r = regions[i];
    const PackedWant& w = pack.regions[i];
    SCOPED_TRACE(r.builder + "." + r.field);
    EXPECT_EQ(w.offset % kCheckPackAlign, 0u);
    ASSERT_LE(w.dense_cells, r.Cells());
    for (int64_t c = 0; c < r.Cells(); ++c) {
      int64_t got = w.tail;
      if (c < w.dense_cells) {
        if (r.int64_field) std::memcpy(&got, packed.data() + w.offset + 8 * c, 8);
        else {
          int32_t v = 0;
          std::memcpy(&v, packed.data() + w.offset + 4 * c, 4);
          got = v;
        }
      }
      ASSERT_EQ(got, r.Want(c)) << "cell " << c;
    }
    if (w.dense_cells > 0 && w.dense_cells < r.Cells())
      EXPECT_NE(r.Want(w.dense_cells - 1), w.tail)
          << "the tail is the longest constant suffix";
    packed_cells += w.dense_cells;
    cells += r.Cells();
  }
  EXPECT_LE(packed_cells, cells);
}

TEST(GpuCheckPlanSpans, SpanCoversStridedRowsAndAnEmptyRegionReadsNothing) {
  SuiteRegion r;
  r.rows = 3;
  r.cols = 4;
  r.got_stride = 10;
  r.got_offset = 7;
  EXPECT_EQ(SpanOf(r).first, 7);
  EXPECT_EQ(SpanOf(r).count, 2 * 10 + 4);
  r.cols = 0;
  EXPECT_EQ(SpanOf(r).count, 0);
  r.cols = 4;
  r.rows = 0;
  EXPECT_EQ(SpanOf(r).count, 0);
}

TEST(GpuCheckPlanSpans, TheBoundSaturatesInsteadOfWrapping) {
  SuiteLayout l;
  l.token_capacity = 0x7fffffff;
  l.window = 0x7fffffff;
  l.bt_out_stride = 0x7fffffff;
  l.max_reqs = 1;
  ASSERT_EQ(GpuSuiteOutputSetBytes(l), kBytesOverflow);
  EXPECT_EQ(MaxRegionCheckBytes(l), kBytesOverflow);
  EXPECT_EQ(MaxWantPackBytes(l), kBytesOverflow);
  l = MakeSuiteLayout(64, 4, 8, ModelConsts{});
  EXPECT_EQ(MaxRegionCheckBytes(l), GpuSuiteOutputSetBytes(l) + kMaxSuiteRegions * kCheckPackAlign);
  EXPECT_EQ(MaxWantPackBytes(l), 2 * GpuSuiteOutputSetBytes(l) + kMaxSuiteRegions * kCheckPackAlign);
}

TEST(RegionCompareReference, CountsPaddingColumnsApartAndReadsTheTail) {
  // [3, 3] over a buffer of stride 4; the reference packs 4 cells, tail 9 after them.
  const std::vector<int32_t> want = {1, 2, 3, 4};
  std::vector<int32_t> got = {1, 2, 3, -1, 4, 9, 9, -1, 9, 9, 9, -1};
  RegionCompareTask t;
  t.want = want.data();
  t.got = got.data();
  t.rows = 3;
  t.cols = 3;
  t.got_stride = 4;
  t.dense_cells = 4;
  t.tail = 9;
  EXPECT_EQ(ref::CountRegionMismatches({t}), (std::vector<int64_t>{0, 0}));
  got[3] = 5;   // outside the region (past the columns)
  got[8] = 0;   // row 2, column 0
  got[10] = 0;  // row 2, column 2
  EXPECT_EQ(ref::CountRegionMismatches({t}), (std::vector<int64_t>{2, 0}));
  t.padding_rows_from = 2;  // row 2 is a padding row: its column 2 counts apart, column 0 does not
  EXPECT_EQ(ref::CountRegionMismatches({t}), (std::vector<int64_t>{1, 1}));
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuCheckPlan, ::testing::ValuesIn(RandomizedCases()),
                         [](const ::testing::TestParamInfo<SuiteCaseParam>& i) { return i.param.name; });

}  // namespace
}  // namespace dspark
