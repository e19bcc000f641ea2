// The one region table (kernels/suite/regions.h): the step dump lists exactly the fields
// CompareSuite compares, over the same extents, and a corrupted cell of any of them is found
// (in (d)'s buffers: fused-suite does not write the prefill metadata yet).
// The indexer's ratio-2 inputs are compared against their own references.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kernels/reference/compressed_slots.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/reference_fields.h"
#include "kernels/suite/regions.h"
#include "kernels/suite/suite.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;

const FieldMismatch* Find(const std::vector<FieldMismatch>& ms, const std::string& builder, const std::string& field) {
  for (const FieldMismatch& m : ms)
    if (m.builder == builder && m.field == field) return &m;
  return nullptr;
}

// Flips the first cell of a region in the image the view points into.
void Corrupt(const SuiteRegion& r, SuiteOutputs& o) {
  if (r.int64_field)
    (o.*(r.got64))[r.got_offset] += 3;
  else if (r.k >= 0)
    (o.indexer[r.k].*(r.got_indexer))[r.got_offset] += 3;
  else
    (o.*(r.got32))[r.got_offset] += 3;
}

TEST(SuiteRegions, DumpAndCompareShareOneTableAndEveryRegionIsChecked) {
  for (uint64_t seed : {4u, 5u}) {
    for (SeedCase c : kAllSeedCases) {
      const CaseBatch b = MustMake(c, OptionsFor(seed));
      const BatchInputs in = b.Inputs();
      // vllm-0.31 builds #57207's segmentation only under the what-if, which makes it write
      // every region.
      ModelConsts consts;
      consts.what_if_57207 = true;
      CpuSuite suite(consts);
      ASSERT_TRUE(suite.Run(Impl::kFused, in).ok());
      const SuiteLayout layout = suite.layout();
      const SuiteReference ref = ComputeSuiteReference(in, layout, consts);
      const std::vector<SuiteRegion> regions = SuiteRegions(ref, in, layout, consts);
      const std::vector<ReferenceField> fields = ReferenceFields(ref, in, layout, consts);
      ASSERT_EQ(fields.size(), regions.size()) << b.name;
      std::set<std::string> names;
      for (size_t i = 0; i < regions.size(); ++i) {
        EXPECT_EQ(fields[i].name, regions[i].builder + "." + regions[i].field) << b.name;
        int64_t cells = 1;
        for (int64_t d : fields[i].shape) cells *= d;
        EXPECT_EQ(cells, regions[i].Cells()) << fields[i].name;
        EXPECT_EQ(static_cast<int64_t>(fields[i].int64_field ? fields[i].i64.size() : fields[i].i32.size()), cells);
        names.insert(fields[i].name);
      }
      // Absent fields, as in vLLM: decode metadata without decodes, segments without prefills.
      EXPECT_EQ(names.count("indexer_r1.seq_out") == 1, b.sizes.num_decodes > 0) << b.name;
      EXPECT_EQ(names.count("prefill_segments.seg_qsl") == 1, b.sizes.num_decodes < b.sizes.num_reqs) << b.name;
      // The prefill metadata: SWA's gather lengths and the indexer's chunks, only with prefills.
      for (const char* f : {"swa.prefill_gather_lens", "indexer_r1.prefill_cu_seq_lens", "indexer_r2.prefill_ke"})
        EXPECT_EQ(names.count(f) == 1, b.sizes.num_decodes < b.sizes.num_reqs) << b.name << " " << f;
      EXPECT_EQ(names.count("indexer_r2.compressed_slots"), 1u) << b.name;
      // compressed_seq_lens only with prefills (vLLM 0.31.0+ builds it under num_prefills > 0).
      EXPECT_EQ(names.count("indexer_r2.compressed_seq_lens") == 1, b.sizes.num_decodes < b.sizes.num_reqs) << b.name;
      for (const SuiteRegion& r : regions) {
        if (r.Cells() == 0) continue;
        absl::StatusOr<SuiteImage> image = suite.Image(Impl::kFused);
        ASSERT_TRUE(image.ok());
        SuiteOutputs view = image->View();
        Corrupt(r, view);
        const std::vector<FieldMismatch> ms = CompareSuite(Impl::kFused, in, ref, layout, consts, view);
        ASSERT_EQ(ms.size(), 1u) << b.name << " " << r.builder << "." << r.field << "\n" << DescribeMismatches(ms);
        EXPECT_EQ(ms[0].builder, r.builder);
        EXPECT_EQ(ms[0].field, r.field);
        EXPECT_EQ(ms[0].index, r.got_offset);
        EXPECT_EQ(ms[0].count, 1);
        EXPECT_EQ(ms[0].kind, MismatchKind::kBug);
      }
    }
  }
}

// get_compressed_slot_mapping's older signature, which vLLM's indexer calls, reads no
// slot_mapping: an unstored token keeps its compressed slot there, unlike MLA ratio 2's.
TEST(SuiteRegions, IndexerRatio2SlotsIgnoreSlotMappingAndLensAreHalved) {
  CaseOptions o;
  o.seed = 3;
  o.unstored_token_every = 2;
  o.padding_reqs = 2;
  const CaseBatch b = MustMake(SeedCase::kMixed, o);
  const BatchInputs in = b.Inputs();
  const std::vector<int64_t> mla = ref::CompressedSlots(b.sizes, in.device, 2, 64);
  const std::vector<int64_t> indexer = ref::CompressedSlots(b.sizes, in.device, 2, 64, /*read_slot_mapping=*/false);
  int64_t only_indexer = 0;
  for (int32_t t = 0; t < b.sizes.capacity; ++t) {
    if (mla[t] != -1) EXPECT_EQ(indexer[t], mla[t]) << t;
    only_indexer += mla[t] == -1 && indexer[t] != -1;
  }
  EXPECT_GT(only_indexer, 0) << "the case must have unstored tokens at odd positions";
  CpuSuite suite;
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, in);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(Find(r->mismatches, "indexer_r2", "compressed_slots"), nullptr) << ImplName(impl);
    EXPECT_EQ(Find(r->mismatches, "indexer_r2", "compressed_seq_lens"), nullptr) << ImplName(impl);
    absl::StatusOr<SuiteImage> im = suite.Image(impl);
    ASSERT_TRUE(im.ok());
    for (int32_t t = 0; t < b.sizes.capacity; ++t) ASSERT_EQ(im->indexer_r2_slots[t], indexer[t]) << ImplName(impl);
    for (int32_t r = 0; r < b.sizes.num_reqs; ++r)
      ASSERT_EQ(im->indexer_r2_csl[r], b.seq_lens[r] / 2) << ImplName(impl) << " request " << r;
  }
}

}  // namespace
}  // namespace dspark
