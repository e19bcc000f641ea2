// CompareSuite compares each field as spans (a memcmp, then the element loop where they differ):
// the first differing index and the count are those of the cell-by-cell comparison, on the
// strided block-table rows too, where columns 1.. of a padding row count as bt_out_padding.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/suite/cases.h"
#include "kernels/suite/suite.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;

const FieldMismatch* Find(const std::vector<FieldMismatch>& ms, const std::string& builder, const std::string& field) {
  for (const FieldMismatch& m : ms)
    if (m.builder == builder && m.field == field) return &m;
  return nullptr;
}

TEST(SuiteCompareSpans, LocatesEveryDifferenceInStridedRowsAndPadding) {
  CaseOptions o;
  o.seed = 4;
  o.batch = 5;
  o.padding_reqs = 2;
  o.bt_stride_slack = 3;
  const CaseBatch b = MustMake(SeedCase::kDecode, o);
  const BatchInputs in = b.Inputs();
  const ModelConsts consts;
  CpuSuite suite;
  ASSERT_TRUE(suite.Run(Impl::kFusedSuite, in).ok());
  absl::StatusOr<SuiteImage> image = suite.Image(Impl::kFusedSuite);
  ASSERT_TRUE(image.ok());
  const SuiteLayout used = suite.layout();
  ASSERT_TRUE(CompareSuite(Impl::kFusedSuite, in, used, consts, image->View()).empty());
  const BatchSizes& z = b.sizes;
  const int64_t actual = in.device.query_start_loc[z.num_decodes];
  ASSERT_LT(actual, z.num_decode_tokens) << "the case needs padding decode rows";
  ASSERT_GE(z.bt_width, 3);
  const int64_t stride = used.bt_out_stride;
  int32_t* bt = image->indexer[1].bt_out.data();
  bt[1 * stride + 2] += 1;               // a real row
  bt[(actual - 1) * stride + 0] += 1;    // the last real row
  bt[actual * stride + 0] += 1;          // column 0 of a padding row: bt_out
  bt[actual * stride + 1] += 1;          // columns 1..: bt_out_padding
  bt[actual * stride + 2] += 1;
  bt[actual * stride + z.bt_width] += 7; // past the width: not defined, not compared
  image->indexer[0].decode_lens[z.num_decode_tokens - 1] += 1;
  image->indexer[0].per_req[0] += 1;
  const std::vector<FieldMismatch> ms = CompareSuite(Impl::kFusedSuite, in, used, consts, image->View());
  const FieldMismatch* rows = Find(ms, "indexer_r2", "bt_out");
  const FieldMismatch* pad = Find(ms, "indexer_r2", "bt_out_padding");
  const FieldMismatch* lens = Find(ms, "indexer_r1", "decode_lens");
  const FieldMismatch* per_req = Find(ms, "indexer_r1", "per_req");
  ASSERT_TRUE(rows && pad && lens && per_req) << DescribeMismatches(ms);
  EXPECT_EQ(ms.size(), 4u) << DescribeMismatches(ms);
  EXPECT_EQ(rows->index, 1 * stride + 2);
  EXPECT_EQ(rows->count, 3);
  EXPECT_EQ(pad->index, actual * stride + 1);
  EXPECT_EQ(pad->count, 2);
  EXPECT_EQ(lens->index, z.num_decode_tokens - 1);
  EXPECT_EQ(lens->count, 1);
  EXPECT_EQ(per_req->index, 0);
  EXPECT_EQ(per_req->actual, per_req->expected + 1);
}

}  // namespace
}  // namespace dspark
