// The CPU check's row buffers grow with the steps (kernels/suite/bt_rows.h): bt_out and
// swa_indices_noncausal to N_d rows, swa_indices to N rows. That is exact only if no
// implementation writes a row past them. Here every implementation runs on full-size poisoned
// buffers (SuiteImage::Filled, what the check allocated before), with its CPU paths and thread by
// thread, over randomized steps of the eight seed cases: every cell past those rows must still
// hold the poison. And the grown image equals the full one at the layout (GrowToLayout).
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "kernels/common/backend.h"
#include "kernels/suite/bt_rows.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/suite.h"
#include "kernels/suite/suite_impls.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;
using suite_test::PathsOff;

constexpr int32_t kPoison = -99;

// The first cell of v at or past `from` that is not the poison, or -1.
int64_t FirstWritten(const std::vector<int32_t>& v, size_t from) {
  for (size_t i = from; i < v.size(); ++i)
    if (v[i] != kPoison) return static_cast<int64_t>(i);
  return -1;
}

void ExpectNothingPastTheRows(Impl impl, const CaseBatch& batch, bool cpu_paths) {
  CaseBatch b = batch;  // the MLA builder clamps the block table in place
  const BatchInputs in = b.Inputs();
  const ModelConsts consts;
  const SuiteLayout layout = MakeSuiteLayout(in.sizes.capacity, in.sizes.num_reqs, in.sizes.bt_stride, consts);
  SuiteImage image = SuiteImage::Filled(layout, kPoison);
  std::vector<int32_t> arange(static_cast<size_t>(layout.arange_len));
  for (size_t i = 0; i < arange.size(); ++i) arange[i] = static_cast<int32_t>(i);
  SuiteStep s;
  s.in = &in;
  s.layout = layout;
  s.consts = consts;
  s.out = image.View();
  s.arange = arange.data();
  CpuBackend be(MaxWorkspaceBytes(layout));
  absl::Status status;
  if (cpu_paths) {
    status = RunSuite(be, impl, s);
  } else {
    PathsOff off;
    status = RunSuite(be, impl, s);
  }
  const std::string name = std::string(ImplName(impl)) + " on " + batch.name + (cpu_paths ? "" : " (per thread)");
  ASSERT_TRUE(status.ok()) << name << ": " << status;
  const size_t nd = static_cast<size_t>(in.sizes.num_decode_tokens), n = static_cast<size_t>(in.sizes.num_tokens);
  for (int k = 0; k < 2; ++k)
    EXPECT_EQ(FirstWritten(image.indexer[k].bt_out, nd * static_cast<size_t>(layout.bt_out_stride)), -1)
        << name << ": bt_out[" << k << "] written past row N_d = " << nd;
  EXPECT_EQ(FirstWritten(image.swa_indices, n * static_cast<size_t>(layout.window)), -1)
      << name << ": swa_indices written past row N = " << n;
  EXPECT_EQ(FirstWritten(image.swa_indices_noncausal, nd * static_cast<size_t>(layout.noncausal_width)), -1)
      << name << ": swa_indices_noncausal written past row N_d = " << nd;
}

TEST(RowGrowth, NoImplementationWritesPastTheStepsRows) {
  int64_t steps = 0, drafts = 0;
  for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    for (SeedCase c : kAllSeedCases) {
      const CaseBatch batch = MustMake(c, OptionsFor(seed));
      ++steps;
      drafts += !batch.Inputs().causal;
      for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
        ExpectNothingPastTheRows(impl, batch, /*cpu_paths=*/true);
        ExpectNothingPastTheRows(impl, batch, /*cpu_paths=*/false);
      }
    }
  }
  EXPECT_EQ(steps, 6 * static_cast<int64_t>(std::size(kAllSeedCases)));
  EXPECT_GT(drafts, 0) << "no draft step: the non-causal rows were not exercised";
}

TEST(RowGrowth, GrownImageAtTheLayoutIsTheFilledOne) {
  const SuiteLayout l = MakeSuiteLayout(300, 7, 13, ModelConsts{});
  SuiteImage grown = FilledWithOneBtRow(l, kPoison);
  EXPECT_EQ(grown.swa_indices.size(), static_cast<size_t>(l.window));
  EXPECT_EQ(grown.swa_indices_noncausal.size(), static_cast<size_t>(l.noncausal_width));
  GrowRows(&grown, StepRows{40, 9}, l.bt_out_stride, l, kPoison);
  EXPECT_EQ(grown.swa_indices.size(), 40u * static_cast<size_t>(l.window));
  EXPECT_EQ(grown.swa_indices_noncausal.size(), 9u * static_cast<size_t>(l.noncausal_width));
  EXPECT_EQ(grown.indexer[1].bt_out.size(), 9u * static_cast<size_t>(l.bt_out_stride));
  grown.swa_indices[5] = 1;  // a written cell stays where it was
  GrowRows(&grown, StepRows{20, 3}, l.bt_out_stride, l, kPoison);  // fewer rows: nothing shrinks
  EXPECT_EQ(grown.swa_indices.size(), 40u * static_cast<size_t>(l.window));
  GrowToLayout(&grown, l, kPoison);
  SuiteImage full = SuiteImage::Filled(l, kPoison);
  full.swa_indices[5] = 1;
  EXPECT_TRUE(grown == full);
}

}  // namespace
}  // namespace dspark
