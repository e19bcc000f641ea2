// The GPU executor's region check on a device (skipped without one):
//   - the device compare kernel counts, on random tasks (int32 and int64, strided rows, padding
//     rows, packed prefixes with constant tails, empty and grid-strided tasks, differences in
//     the high word), exactly what its CPU reference ref::CountRegionMismatches counts;
//   - GpuRegionCheck (on the device, and by span download) returns for every implementation the
//     very SuiteRunResult of WholeBufferCheck (whole buffers, the old path) on the eight cases,
//     before and after differences are planted in the device outputs;
//   - with a hint whose inputs are not the device truth (the qsl rewritten in place), the check
//     recomputes the reference and still equals WholeBufferCheck;
//   - Prepare / Enqueue / Finish and Begin / Finish, with an event wait between them, give
//     Check's results.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/reference/region_compare.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/gpu_check.cuh"
#include "kernels/suite/gpu_check_plan.h"
#include "kernels/suite/gpu_compare.cuh"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/regions.h"
#include "tests/common/whole_buffer_check.cuh"
#include "tests/common/gpu_suite_capacity.cuh"
#include "tests/common/gpu_test_util.cuh"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::RandomizedCases;
using suite_test::SuiteCaseParam;
using suite_test::TestCapacity;

TEST(RegionCompareGpu, CountsEqualTheCpuReferenceOnRandomTasks) {
  DS_REQUIRE_GPU();
  std::mt19937_64 rng(20261201);
  CudaStream stream;
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const int n = 1 + static_cast<int>(rng() % 40);
    // Offsets first, then one host arena each for the references and the buffers.
    struct Spec {
      RegionCompareTask t;
      size_t want_off, got_off;
    };
    std::vector<Spec> specs;
    size_t want_bytes = 0, got_bytes = 0;
    for (int i = 0; i < n; ++i) {
      Spec s{};
      RegionCompareTask& t = s.t;
      t.elem_bytes = rng() % 2 ? 8 : 4;
      const bool big = i == 0 && trial % 3 == 0;  // more cells than the capped grid covers at once
      t.rows = big ? 3000 + static_cast<int64_t>(rng() % 2000) : static_cast<int64_t>(rng() % 300);
      t.cols = big ? 128 : static_cast<int64_t>(rng() % 70);
      t.got_stride = t.cols + static_cast<int64_t>(rng() % 5);
      t.padding_rows_from = rng() % 3 == 0 && t.rows > 0 ? static_cast<int64_t>(rng() % t.rows) : -1;
      const int64_t cells = t.rows * t.cols;
      t.dense_cells = cells > 0 ? static_cast<int64_t>(rng() % (cells + 1)) : 0;
      t.tail = static_cast<int64_t>(rng() % 7) - 1;
      s.want_off = want_bytes;
      s.got_off = got_bytes;
      want_bytes += (static_cast<size_t>(t.dense_cells) * t.elem_bytes + 15) / 16 * 16;
      got_bytes += (static_cast<size_t>(t.rows * t.got_stride) * t.elem_bytes + 15) / 16 * 16;
      specs.push_back(s);
    }
    std::vector<uint8_t> want(want_bytes + 16), got(got_bytes + 16);
    const auto put = [](uint8_t* base, int32_t bytes, int64_t i, int64_t v) {
      if (bytes == 8) std::memcpy(base + 8 * i, &v, 8);
      else {
        const int32_t w = static_cast<int32_t>(v);
        std::memcpy(base + 4 * i, &w, 4);
      }
    };
    for (const Spec& s : specs) {
      const RegionCompareTask& t = s.t;
      for (int64_t c = 0; c < t.dense_cells; ++c)
        put(want.data() + s.want_off, t.elem_bytes, c,
            t.elem_bytes == 8 ? static_cast<int64_t>(rng() >> 8) : static_cast<int64_t>(rng() % 100000));
      // Equal everywhere in the region, noise in the stride gap, then planted differences.
      for (int64_t r = 0; r < t.rows; ++r)
        for (int64_t c = 0; c < t.got_stride; ++c) {
          int64_t v = static_cast<int64_t>(rng() % 1000) + 7;
          if (c < t.cols) {
            const int64_t cell = r * t.cols + c;
            v = t.tail;
            if (cell < t.dense_cells) {
              v = 0;
              std::memcpy(&v, want.data() + s.want_off + cell * t.elem_bytes, t.elem_bytes);
              if (t.elem_bytes == 4) v = static_cast<int32_t>(v);
            }
          }
          put(got.data() + s.got_off, t.elem_bytes, r * t.got_stride + c, v);
        }
      const int64_t cells = t.rows * t.cols;
      for (int p = 0; cells > 0 && p < static_cast<int>(rng() % 6); ++p) {
        const int64_t cell = static_cast<int64_t>(rng() % cells);
        const int64_t at = (cell / t.cols) * t.got_stride + cell % t.cols;
        uint8_t* g = got.data() + s.got_off;
        if (t.elem_bytes == 8) {
          int64_t v;
          std::memcpy(&v, g + 8 * at, 8);
          v ^= int64_t{1} << (32 + rng() % 20);  // the high word only
          std::memcpy(g + 8 * at, &v, 8);
        } else {
          int32_t v;
          std::memcpy(&v, g + 4 * at, 4);
          v += 1 + static_cast<int32_t>(rng() % 9);
          std::memcpy(g + 4 * at, &v, 4);
        }
      }
    }
    DeviceBuffer<uint8_t> d_want(want.size()), d_got(got.size());
    CUDA_CHECK(cudaMemcpy(d_want.get(), want.data(), want.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_got.get(), got.data(), got.size(), cudaMemcpyHostToDevice));
    std::vector<RegionCompareTask> host_tasks, dev_tasks;
    int64_t max_cells = 0;
    for (const Spec& s : specs) {
      RegionCompareTask h = s.t, d = s.t;
      h.want = want.data() + s.want_off;
      h.got = got.data() + s.got_off;
      d.want = d_want.get() + s.want_off;
      d.got = d_got.get() + s.got_off;
      host_tasks.push_back(h);
      dev_tasks.push_back(d);
      max_cells = std::max(max_cells, s.t.rows * s.t.cols);
    }
    DeviceBuffer<RegionCompareTask> d_tasks(dev_tasks);
    DeviceBuffer<unsigned long long> d_counts(2 * dev_tasks.size());
    CUDA_CHECK(cudaMemset(d_counts.get(), 0, d_counts.bytes()));
    const absl::Status launch =
        LaunchRegionCompare(d_tasks.get(), static_cast<int32_t>(dev_tasks.size()), max_cells, d_counts.get(),
                            stream.get());
    ASSERT_TRUE(launch.ok()) << launch;
    CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    const std::vector<unsigned long long> gpu = d_counts.Download();
    const std::vector<int64_t> cpu = ref::CountRegionMismatches(host_tasks);
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) EXPECT_EQ(static_cast<int64_t>(gpu[i]), cpu[i]) << "count " << i;
  }
}

struct Harness {
  std::unique_ptr<GpuSuite> suite;
  std::unique_ptr<GpuRegionCheck> device, spans;
};

Harness MakeHarness() {
  Harness h;
  auto s = GpuSuite::Create(TestCapacity());
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return h;
  h.suite = *std::move(s);
  const int n = static_cast<int>(AllImpls().size());
  auto d = GpuRegionCheck::Create(h.suite->layout(), TestCapacity(), n, /*on_device=*/true);
  auto p = GpuRegionCheck::Create(h.suite->layout(), TestCapacity(), n, /*on_device=*/false);
  EXPECT_TRUE(d.ok() && p.ok());
  if (d.ok()) h.device = *std::move(d);
  if (p.ok()) h.spans = *std::move(p);
  return h;
}

// Every implementation's result by the old path, the device check (with and without a hint) and
// the span check: the same mismatches (every field of each) and counters.
void ExpectAllPathsAgree(Harness& h, const BatchInputs* hint_in, const SuiteReference* hint_want) {
  const std::vector<Impl>& impls = ImplsOfModel(ModelKind::kV41);
  std::vector<std::string> old;
  std::vector<OpCounters> old_counters;
  for (Impl impl : impls) {
    absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*h.suite, impl);
    ASSERT_TRUE(r.ok()) << r.status();
    old.push_back(DescribeMismatches(r->mismatches));
    old_counters.push_back(r->counters);
  }
  struct Path {
    const char* name;
    GpuRegionCheck* check;
    bool hint;
  };
  for (const Path& p : {Path{"device", h.device.get(), false}, Path{"device+hint", h.device.get(), true},
                        Path{"spans", h.spans.get(), false}, Path{"spans+hint", h.spans.get(), true}}) {
    SCOPED_TRACE(p.name);
    absl::StatusOr<std::vector<SuiteRunResult>> r =
        p.check->Check(*h.suite, impls, p.hint ? hint_want : nullptr, p.hint ? hint_in : nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->size(), impls.size());
    for (size_t i = 0; i < impls.size(); ++i) {
      EXPECT_EQ(DescribeMismatches((*r)[i].mismatches), old[i]) << ImplName(impls[i]);
      EXPECT_EQ((*r)[i].counters.Launches(), old_counters[i].Launches()) << ImplName(impls[i]);
    }
  }
}

// Plants up to `n` differences in defined cells of the device outputs of random implementations
// (int64 ones in the high word).
void PlantDifferences(Harness& h, const SuiteReference& want, const BatchInputs& in, uint64_t seed, int n) {
  const std::vector<SuiteRegion> regions = SuiteRegions(want, in, h.suite->layout(), h.suite->consts());
  std::mt19937_64 rng(seed);
  for (int p = 0; p < n; ++p) {
    const Impl impl = ImplsOfModel(ModelKind::kV41)[rng() % ImplsOfModel(ModelKind::kV41).size()];
    const SuiteRegion& r = regions[rng() % regions.size()];
    if (r.Cells() == 0) continue;
    const absl::StatusOr<SuiteOutputs> outs = h.suite->device_outputs(impl);
    ASSERT_TRUE(outs.ok());
    const int64_t cell = static_cast<int64_t>(rng() % static_cast<uint64_t>(r.Cells()));
    const int64_t at = r.got_offset + (cell / r.cols) * r.got_stride + cell % r.cols;
    uint8_t* dev = static_cast<uint8_t*>(const_cast<void*>(RegionBuffer(r, *outs))) + at * ElemBytes(r);
    int64_t v = 0;
    CUDA_CHECK(cudaMemcpy(&v, dev, ElemBytes(r), cudaMemcpyDeviceToHost));
    v = r.int64_field ? v ^ (int64_t{1} << 40) : static_cast<int64_t>(static_cast<int32_t>(v) + 3);
    CUDA_CHECK(cudaMemcpy(dev, &v, ElemBytes(r), cudaMemcpyHostToDevice));
  }
}

// Stages `in`, runs every implementation on it and returns the reference of `in`.
SuiteReference StageAndRunAll(Harness& h, const BatchInputs& in) {
  EXPECT_TRUE(h.suite->Stage(in).ok());
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) EXPECT_TRUE(h.suite->Run(impl).ok()) << ImplName(impl);
  return ComputeSuiteReference(in, h.suite->layout(), h.suite->consts());
}

class GpuRegionCheckCases : public ::testing::TestWithParam<SuiteCaseParam> {};

TEST_P(GpuRegionCheckCases, EqualsTheWholeBufferDownloadWithAndWithoutPlantedDifferences) {
  DS_REQUIRE_GPU();
  const CaseBatch b = MustMake(GetParam().seed_case, GetParam().options);
  Harness h = MakeHarness();
  ASSERT_NE(h.device, nullptr);
  const BatchInputs in = b.Inputs();
  const SuiteReference want = StageAndRunAll(h, in);
  ASSERT_FALSE(::testing::Test::HasFailure());
  ExpectAllPathsAgree(h, &in, &want);
  EXPECT_EQ(h.device->stats().references_computed, 1) << "the hint's inputs are the truth: used";

  PlantDifferences(h, want, in, GetParam().options.seed * 7 + static_cast<uint64_t>(GetParam().seed_case), 12);
  ExpectAllPathsAgree(h, &in, &want);
  EXPECT_GT(h.device->stats().mirrored, 0) << "a planted difference must send an implementation to the spans";
}

INSTANTIATE_TEST_SUITE_P(EightSeedCases, GpuRegionCheckCases, ::testing::ValuesIn(RandomizedCases()),
                         [](const auto& info) { return info.param.name; });

// An adaptive verification step of the seed's layout with `padding_reqs` padding requests.
CaseBatch AdaptiveStep(uint64_t seed, int32_t padding_reqs) {
  CaseOptions o;
  o.seed = seed;
  o.padding_reqs = padding_reqs;
  o.max_num_batched_tokens = 2048;
  return MustMake(SeedCase::kAdaptiveVerify, o);
}

TEST(GpuRegionCheck, RecomputesTheReferenceWhenTheHintIsNotTheDeviceTruth) {
  DS_REQUIRE_GPU();
  const CaseBatch b = AdaptiveStep(31, 2);
  const absl::StatusOr<std::vector<int32_t>> resplit = ResplitDecodeTokens(b);
  ASSERT_TRUE(resplit.ok()) << resplit.status();
  Harness h = MakeHarness();
  ASSERT_NE(h.device, nullptr);
  const BatchInputs in = b.Inputs();
  ASSERT_TRUE(h.suite->Stage(in).ok());
  ASSERT_TRUE(h.suite->OverwriteDeviceQsl(*resplit).ok());
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) ASSERT_TRUE(h.suite->Run(impl).ok()) << ImplName(impl);
  const SuiteReference stale = ComputeSuiteReference(in, h.suite->layout(), h.suite->consts());
  ExpectAllPathsAgree(h, &in, &stale);
  // device: once without the hint, once with it (rejected); the same for spans.
  EXPECT_EQ(h.device->stats().references_computed, 2);
  EXPECT_EQ(h.spans->stats().references_computed, 2);
}

// The executor's orders: Prepare, a wait on an event recorded before it (as the executor reads
// its timing events), then Enqueue and Finish; and Begin (Prepare + Enqueue) before the wait:
// both give Check's results, and the parts refuse to run out of order.
TEST(GpuRegionCheck, PartsAroundAnEventWaitEqualCheck) {
  DS_REQUIRE_GPU();
  const CaseBatch b = AdaptiveStep(47, 3);
  Harness h = MakeHarness();
  ASSERT_NE(h.device, nullptr);
  const BatchInputs in = b.Inputs();
  const SuiteReference want = StageAndRunAll(h, in);
  ASSERT_FALSE(::testing::Test::HasFailure());
  PlantDifferences(h, want, in, 4747, 6);
  const absl::StatusOr<std::vector<SuiteRunResult>> whole = h.device->Check(*h.suite, ImplsOfModel(ModelKind::kV41), &want, &in);
  ASSERT_TRUE(whole.ok()) << whole.status();
  bool any = false;
  for (const SuiteRunResult& r : *whole) any = any || !r.mismatches.empty();
  EXPECT_TRUE(any) << "the planted differences must be found";

  EXPECT_EQ(h.device->Finish().status().code(), absl::StatusCode::kFailedPrecondition) << "Finish without Prepare";
  EXPECT_EQ(h.device->Enqueue().code(), absl::StatusCode::kFailedPrecondition) << "Enqueue without Prepare";
  for (const bool enqueue_first : {false, true}) {
    SCOPED_TRACE(enqueue_first ? "Begin, wait, Finish" : "Prepare, wait, Enqueue, Finish");
    cudaEvent_t done;
    CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(done, h.suite->stream()));
    if (enqueue_first) {
      ASSERT_TRUE(h.device->Begin(*h.suite, ImplsOfModel(ModelKind::kV41), &want, &in).ok());
    } else {
      ASSERT_TRUE(h.device->Prepare(*h.suite, ImplsOfModel(ModelKind::kV41), &want, &in).ok());
      EXPECT_EQ(h.device->Finish().status().code(), absl::StatusCode::kFailedPrecondition)
          << "Finish before Enqueue";
    }
    EXPECT_EQ(h.device->Prepare(*h.suite, ImplsOfModel(ModelKind::kV41), &want, &in).code(), absl::StatusCode::kFailedPrecondition)
        << "a second Prepare before Finish";
    CUDA_CHECK(cudaEventSynchronize(done));
    CUDA_CHECK(cudaEventDestroy(done));
    if (!enqueue_first) {
      ASSERT_TRUE(h.device->Enqueue().ok());
      EXPECT_EQ(h.device->Enqueue().code(), absl::StatusCode::kFailedPrecondition) << "a second Enqueue";
    }
    const absl::StatusOr<std::vector<SuiteRunResult>> parts = h.device->Finish();
    ASSERT_TRUE(parts.ok()) << parts.status();
    ASSERT_EQ(parts->size(), whole->size());
    for (size_t i = 0; i < whole->size(); ++i)
      EXPECT_EQ(DescribeMismatches((*parts)[i].mismatches), DescribeMismatches((*whole)[i].mismatches))
          << ImplName(ImplsOfModel(ModelKind::kV41)[i]);
  }
  EXPECT_EQ(h.device->stats().steps, 3);
}

}  // namespace
}  // namespace dspark
