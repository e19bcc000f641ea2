// The kernels' CPU paths (CpuRun, the elementwise loop: kernels/common/grid.h) against the
// per-thread emulation: every registered implementation's whole output buffers (every cell, not
// only the defined regions), its mismatches and its counters are byte-identical with the paths
// on and off, on randomized steps of the eight seed cases run back to back on the same buffers
// (so cells left from earlier steps count too), and on lone launches of the scan over random
// lengths.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/ops.cuh"
#include "kernels/paged_mqa_schedule.cuh"
#include "kernels/suite/cases.h"
#include "kernels/suite/fused_suite.cuh"
#include "kernels/suite/suite.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;
using suite_test::PathsOff;

std::string Describe(const absl::StatusOr<SuiteRunResult>& r) {
  if (!r.ok()) return r.status().ToString();
  const OpCounters& c = r->counters;
  return DescribeMismatches(r->mismatches) + std::to_string(c.kernels) + "/" + std::to_string(c.fills) + "/" +
         std::to_string(c.d2d_copies) + "/" + std::to_string(c.h2d_copies) + "/" + std::to_string(c.host_array_ops);
}

TEST(CpuPaths, WholeBuffersEqualPerThreadEmulationAcrossSteps) {
  CpuSuite fast, slow;
  int64_t steps = 0;
  for (uint64_t seed : {1, 2, 3, 4, 5, 6, 7, 8, 9}) {
    for (SeedCase c : kAllSeedCases) {
      CaseOptions o = OptionsFor(seed);
      if (seed >= 7) o.batch = 40 + static_cast<int32_t>(seed);  // more requests, wider scans
      const CaseBatch batch = MustMake(c, o);
      CaseBatch b_fast = batch, b_slow = batch;
      ++steps;
      for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
        const std::string name = std::string(ImplName(impl)) + " on " + batch.name + " seed " + std::to_string(seed);
        const absl::StatusOr<SuiteRunResult> r_fast = fast.Run(impl, b_fast.Inputs());
        absl::StatusOr<SuiteRunResult> r_slow = absl::UnknownError("not run");
        {
          PathsOff off;
          r_slow = slow.Run(impl, b_slow.Inputs());
        }
        ASSERT_TRUE(r_fast.ok()) << name << ": " << r_fast.status();
        EXPECT_EQ(Describe(r_fast), Describe(r_slow)) << name;
        const absl::StatusOr<SuiteImage> a = fast.Image(impl), b = slow.Image(impl);
        ASSERT_TRUE(a.ok() && b.ok());
        EXPECT_TRUE(*a == *b) << name << ": the CPU paths changed a cell of the output buffers";
      }
    }
  }
  EXPECT_EQ(steps, 9 * static_cast<int64_t>(std::size(kAllSeedCases)));
}

// The fused suite's decode rows (its CPU path copies them with IndexerCopyRowFrom, the GPU
// blocks with CopyRowChunkOf in chunks of kRowChunk columns): block tables from one column to
// past two chunks, strided, with padding rows and stale host views, every cell of every buffer
// byte-identical to the per-thread emulation, step after step on the same buffers.
TEST(CpuPaths, FusedSuiteRowsOfEveryWidthEqualPerThreadEmulation) {
  CpuSuite fast, slow;
  int64_t wide = 0, padded = 0;
  for (int32_t width : {1, 3, 255, 256, 257, 1023, 1024, 1025, 2049, 2500}) {
    for (SeedCase c : {SeedCase::kDecode, SeedCase::kVerify, SeedCase::kAdaptiveDraft, SeedCase::kMixed}) {
      CaseOptions o = OptionsFor(static_cast<uint64_t>(width) % 7 + 1);
      o.max_context = 2000;
      o.min_bt_width = width;
      o.bt_stride_slack = width % 5;
      o.pad_to_capture_size = true;
      o.padding_reqs = width % 3;
      CaseBatch batch = MustMake(c, o);
      CaseBatch b_fast = batch, b_slow = batch;
      wide += batch.sizes.bt_width > FusedSuiteKernel::kRowChunk;
      padded += batch.sizes.num_decode_tokens > batch.qsl[batch.sizes.num_decodes];
      const std::string name = batch.name + " width " + std::to_string(batch.sizes.bt_width);
      const absl::StatusOr<SuiteRunResult> r_fast = fast.Run(Impl::kFusedSuite, b_fast.Inputs());
      absl::StatusOr<SuiteRunResult> r_slow = absl::UnknownError("not run");
      {
        PathsOff off;
        r_slow = slow.Run(Impl::kFusedSuite, b_slow.Inputs());
      }
      ASSERT_TRUE(r_fast.ok()) << name << ": " << r_fast.status();
      EXPECT_EQ(Describe(r_fast), Describe(r_slow)) << name;
      const absl::StatusOr<SuiteImage> a = fast.Image(Impl::kFusedSuite), b = slow.Image(Impl::kFusedSuite);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_TRUE(*a == *b) << name << ": the CPU path changed a cell of the output buffers";
    }
  }
  EXPECT_GT(wide, 0) << "no table past one row chunk";
  EXPECT_GT(padded, 0) << "no padding row";
}

// The CPU emulator skips vLLM's out.fill_(-1) before a CompressedSlotKernel over the same
// buffer (suite_internal::FillI64MinusOneOverwritten): sound only because the kernel stores every
// cell of out[0, capacity) whatever out held before, on both paths. Checked from two different
// prior contents, on every seed case, both ratios, with and without slot_mapping.
TEST(CpuPaths, CompressedSlotKernelOverwritesItsWholeBuffer) {
  int64_t launches = 0;
  for (uint64_t seed : {1, 2, 3}) {
    for (SeedCase c : kAllSeedCases) {
      const CaseBatch batch = MustMake(c, OptionsFor(seed));
      for (int32_t ratio : {1, 2})
        for (int32_t ignore : {0, 1})
          for (bool paths : {true, false}) {
            const int32_t cap = batch.sizes.capacity;
            std::vector<int64_t> filled(static_cast<size_t>(cap), -1), poisoned(static_cast<size_t>(cap));
            for (int32_t t = 0; t < cap; ++t) poisoned[t] = int64_t{0x5A5A5A5A} * (t + 3);
            CaseBatch b = batch;
            const BatchInputs in = b.Inputs();
            CompressedSlotParams p = MakeCompressedSlotParams(in.sizes, in.device, ModelConsts{}, ratio, nullptr, filled.data());
            p.ignore_slot_mapping = ignore;
            ASSERT_TRUE(CanImplementCompressedSlots(p).ok());
            const bool was = CpuPathsEnabled();
            CpuPathsEnabled() = paths;
            p.out = filled.data();
            EmulateCompressedSlots(p);
            p.out = poisoned.data();
            EmulateCompressedSlots(p);
            CpuPathsEnabled() = was;
            ++launches;
            EXPECT_EQ(filled, poisoned) << batch.name << " seed " << seed << " ratio " << ratio << " paths " << paths;
          }
    }
  }
  EXPECT_EQ(launches, 3 * 2 * 2 * 2 * static_cast<int64_t>(std::size(kAllSeedCases)));
}

TEST(CpuPaths, ScanOfEveryLengthEqualsPerThreadEmulation) {
  std::mt19937 rng(17);
  for (int32_t n : {0, 1, 2, 7, 255, 256, 257, 511, 1000, 4099}) {
    std::vector<int32_t> in(static_cast<size_t>(n));
    for (int32_t& v : in) v = static_cast<int32_t>(rng() % 9) - 2;
    std::vector<int32_t> fast(static_cast<size_t>(n) + 3, -7), slow = fast;
    const ops::InclusiveScanKernel kf{in.data(), fast.data(), n}, ks{in.data(), slow.data(), n};
    EmulateGrid(kf, kf.Shape());
    EmulateGridPerThread(ks, ks.Shape());
    EXPECT_EQ(fast, slow) << "n=" << n;
  }
}

// DeepGEMM's scheduler: its scratch (atom starts, prefix sums) and its output, over batches with
// and without paired tokens, SM counts around the segment count, and lengths whose segment sums
// wrap around uint32 (the chunked scan and the running sum must agree modulo 2^32).
TEST(CpuPaths, PagedMqaScheduleEqualsPerThreadEmulation) {
  std::mt19937 rng(23);
  int64_t cases = 0;
  for (int32_t n : {0, 1, 2, 3, 31, 32, 33, 64, 65, 200, 1000}) {
    for (int32_t sms : {1, 3, 32, 132, 133}) {
      for (int wide = 0; wide < 2; ++wide) {
        std::vector<int32_t> lens(static_cast<size_t>(n)), indices(static_cast<size_t>(n));
        int32_t req = 0;
        for (int32_t t = 0; t < n; ++t) {
          if (t > 0 && rng() % 3 != 0) ++req;  // about a third of the tokens pair with the previous
          indices[t] = req;
          lens[t] = wide ? static_cast<int32_t>(rng() | 0x40000000u) : static_cast<int32_t>(rng() % 5000);
        }
        std::vector<int32_t> work_f(2 * static_cast<size_t>(n) + 3, -5), work_s = work_f;
        std::vector<int32_t> out_f(2 * static_cast<size_t>(sms + 1) + 3, -6), out_s = out_f;
        const PagedMqaScheduleParams pf{lens.data(), indices.data(), work_f.data(), out_f.data(), n, sms};
        const PagedMqaScheduleParams ps{lens.data(), indices.data(), work_s.data(), out_s.data(), n, sms};
        EmulateGrid(PagedMqaScheduleKernel{pf}, PagedMqaScheduleKernel::Shape(pf));
        EmulateGridPerThread(PagedMqaScheduleKernel{ps}, PagedMqaScheduleKernel::Shape(ps));
        EXPECT_EQ(work_f, work_s) << "n=" << n << " sms=" << sms << " wide=" << wide;
        EXPECT_EQ(out_f, out_s) << "n=" << n << " sms=" << sms << " wide=" << wide;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 11 * 5 * 2);
}

}  // namespace
}  // namespace dspark
