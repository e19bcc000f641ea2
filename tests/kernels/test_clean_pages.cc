// Clean pages (kernels/common/clean_pages.h): what the CPU check skips is equal by construction.
// A single changed cell, at random positions (fixed seed), is still found: in a bare buffer, and
// in every per-capacity tail of every implementation of the suite, changed between a step's
// emulation and its comparison (what a stray store of a kernel is), with the same mismatches as
// the comparison that reads every cell.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/clean_pages.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/regions.h"
#include "kernels/suite/suite.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;

// A page-aligned int64 buffer of `n` cells.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t n) : cells(n) {
    const size_t page = clean_pages::PageBytes();
    raw = std::aligned_alloc(page, (n * sizeof(int64_t) + page - 1) / page * page);
    p = static_cast<int64_t*>(raw);
  }
  ~AlignedBuffer() {
    clean_pages::ForgetAll();  // its pages writable and forgotten before they are freed
    std::free(raw);
  }
  size_t cells;
  void* raw;
  int64_t* p;
};

std::vector<std::pair<int64_t, int64_t>> Unknown(const int64_t* p, int64_t n, int64_t v) {
  std::vector<std::pair<int64_t, int64_t>> out;
  clean_pages::ForEachUnknown(p, n, v, [&](int64_t b, int64_t e) { out.emplace_back(b, e); });
  return out;
}

TEST(CleanPages, AWriteAnywhereMakesItsPageCompareAgain) {
  if (!clean_pages::Enable()) GTEST_SKIP() << "clean pages are not available here (a sanitizer build)";
  const int64_t per_page = static_cast<int64_t>(clean_pages::PageBytes() / sizeof(int64_t));
  const int64_t n = 16 * per_page;
  AlignedBuffer buf(static_cast<size_t>(n));
  int64_t* p = buf.p;
  std::fill(p, p + n, -1);
  clean_pages::NoteEqual(p, 0, n, int64_t{-1});
  ASSERT_TRUE(Unknown(p, n, -1).empty()) << "every page was compared equal";
  EXPECT_EQ(Unknown(p, n, 0).size(), 1u) << "a page is clean for its own value only";
  std::mt19937_64 rng(31);
  for (int i = 0; i < 300; ++i) {
    const int64_t at = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    const int64_t faults = clean_pages::GetStats().faults;
    p[at] = static_cast<int64_t>(rng() % 1000);  // traps, then lands
    EXPECT_EQ(clean_pages::GetStats().faults, faults + 1);
    EXPECT_NE(p[at], -1);
    // Exactly the written cell's page is compared again.
    const auto unknown = Unknown(p, n, -1);
    ASSERT_EQ(unknown.size(), 1u);
    EXPECT_EQ(unknown[0].first, at / per_page * per_page);
    EXPECT_EQ(unknown[0].second, at / per_page * per_page + per_page);
    // A fill of -1 writes that page (and skips the clean ones): the buffer is all -1 again.
    clean_pages::TailFill(p + rng() % 7, p + n, int64_t{-1});
    p[at] = -1;  // (the cells before the fill's start)
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(p[j], -1) << "cell " << j;
    clean_pages::NoteEqual(p, 0, n, int64_t{-1});
  }
  // A partial page at either end is never marked: only whole pages inside a compared range are.
  clean_pages::ForgetAll();
  clean_pages::NoteEqual(p, 1, n - 1, int64_t{-1});
  const auto unknown = Unknown(p, n, -1);
  ASSERT_EQ(unknown.size(), 2u);
  EXPECT_EQ(unknown[0], std::make_pair(int64_t{0}, per_page));
  EXPECT_EQ(unknown[1], std::make_pair(n - per_page, n));
}

// The buffer cell of region r (a per-capacity tail field) at `cell`, in `out`.
void* CellOf(const SuiteRegion& r, const SuiteOutputs& out, int64_t cell) {
  const int64_t at = r.got_offset + cell;
  if (r.int64_field) return out.*(r.got64) + at;
  return (r.k >= 0 ? out.indexer[r.k].*(r.got_indexer) : out.*(r.got32)) + at;
}

bool impl_traits_write_prefill(Impl impl) { return impl.info().traits.writes_prefill_metadata; }

// Differing cells of region r's field in `ms`.
int64_t FieldCount(const std::vector<FieldMismatch>& ms, const SuiteRegion& r) {
  int64_t n = 0;
  for (const FieldMismatch& m : ms)
    if (m.builder == r.builder && m.field == r.field) n += m.count;
  return n;
}

std::string Describe(const std::vector<FieldMismatch>& ms) {
  std::string out;
  for (const FieldMismatch& m : ms) out += std::string(MismatchKindName(m.kind)) + " ";
  return DescribeMismatches(ms) + out;
}

TEST(CleanPages, ASingleChangedCellOfAnyTailIsFoundAtAnyPosition) {
  CpuSuite suite;
  suite.EnableDedup(ImplsOfModel(ModelKind::kV41));
  if (!clean_pages::Enabled()) GTEST_SKIP() << "clean pages are not available here (a sanitizer build)";
  std::mt19937_64 rng(2024);
  const clean_pages::Stats before = clean_pages::GetStats();
  int64_t changed = 0, in_tail = 0;
  for (int round = 0; round < 40; ++round) {
    for (SeedCase c : kAllSeedCases) {
      CaseBatch batch = MustMake(c, OptionsFor(1 + round % 5));
      const BatchInputs in = batch.Inputs();
      ASSERT_TRUE(suite.Prepare(in.sizes).ok());
      const SuiteReference want = ComputeSuiteReference(in, suite.layout(), ModelConsts{});
      ASSERT_TRUE(suite.BeginStep(in, want.token_to_req).ok());
      for (Impl impl : ImplsOfModel(ModelKind::kV41)) ASSERT_TRUE(suite.Emulate(impl, in).ok());
      // One cell of one per-capacity field of one implementation, anywhere in the field.
      std::vector<SuiteRegion> tails;
      for (const SuiteRegion& r : SuiteRegions(want, in, suite.layout(), ModelConsts{}))
        if (r.want_cells >= 0 && r.Cells() > 0) tails.push_back(r);
      ASSERT_FALSE(tails.empty());
      const SuiteRegion& r = tails[rng() % tails.size()];
      const Impl victim = ImplsOfModel(ModelKind::kV41)[rng() % ImplsOfModel(ModelKind::kV41).size()];
      if (r.prefill_metadata && !impl_traits_write_prefill(victim)) continue;
      // A cell equal to the reference (most are), anywhere in the field.
      int64_t cell = -1;
      for (int tries = 0; tries < 20 && cell < 0; ++tries) {
        const int64_t c2 = static_cast<int64_t>(rng() % static_cast<uint64_t>(r.Cells()));
        const void* p = CellOf(r, suite.LiveOutputs(victim), c2);
        const int64_t v = r.int64_field ? *static_cast<const int64_t*>(p) : *static_cast<const int32_t*>(p);
        if (v == r.Want(c2)) cell = c2;
      }
      if (cell < 0) continue;
      const int64_t base =
          FieldCount(CompareSuite(victim, in, want, suite.layout(), ModelConsts{}, suite.LiveOutputs(victim)), r);
      in_tail += cell >= r.GivenCells();
      void* at = CellOf(r, suite.LiveOutputs(victim), cell);
      if (r.int64_field)
        *static_cast<int64_t*>(at) += 1 + static_cast<int64_t>(rng() % 5);
      else
        *static_cast<int32_t*>(at) += 1 + static_cast<int32_t>(rng() % 5);
      ++changed;
      for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
        const std::string name = std::string(ImplName(impl)) + " on " + batch.name + ", " + r.builder + "/" + r.field +
                                 " cell " + std::to_string(cell) + " of " + std::string(ImplName(victim));
        // The oracle: every cell compared, no memo, no clean page.
        const std::vector<FieldMismatch> full =
            CompareSuite(impl, in, want, suite.layout(), ModelConsts{}, suite.LiveOutputs(impl));
        const std::vector<FieldMismatch> got = suite.Compare(impl, in, want);
        EXPECT_EQ(Describe(got), Describe(full)) << name;
        if (impl == victim) {
          EXPECT_EQ(FieldCount(got, r), base + 1) << name << "\n" << Describe(got);
          if (base == 0)
            for (const FieldMismatch& m : got)
              if (m.builder == r.builder && m.field == r.field) EXPECT_EQ(m.index, r.got_offset + cell) << name;
        }
      }
      // Put it back, as the next step's fill would.
      if (r.int64_field)
        *static_cast<int64_t*>(at) = r.Want(cell);
      else
        *static_cast<int32_t*>(at) = static_cast<int32_t>(r.Want(cell));
    }
  }
  const clean_pages::Stats after = clean_pages::GetStats();
  EXPECT_GT(after.pages_marked, before.pages_marked) << "no page was ever clean: nothing was skipped";
  EXPECT_GT(after.faults, before.faults) << "no change landed on a clean page";
  EXPECT_GT(in_tail, changed / 2) << "most changes should fall in the constant tails";
}

}  // namespace
}  // namespace dspark
