// DeepSeek-V4's states (vllm-0.24, vllm-0.27, vllm-0.29: docs/states.md s.9) on the GPU: every
// seed case over three seeds, each state run eagerly through GpuSuite and downloaded, equal to the
// reference up to what its release is known to leave (stale-host divergence where it reads a stale
// host split, the old indexer chain's padding residue), with the launches the CPU emulation counts.
#include <gtest/gtest.h>

#include <memory>
#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/suite/cases.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/suite.h"
#include "tests/common/whole_buffer_check.cuh"
#include "tests/common/gpu_suite_capacity.cuh"
#include "tests/common/gpu_test_util.cuh"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::TestCapacity;

std::set<std::string> StaleFields(const std::vector<FieldMismatch>& ms) {
  std::set<std::string> out;
  for (const FieldMismatch& m : ms)
    if (m.kind == MismatchKind::kStaleHost) out.insert(m.builder + "." + m.field);
  return out;
}

TEST(SuiteGpuV4, EveryStateEveryCaseAgreesWithTheReferenceAndTheCpuCounts) {
  DS_REQUIRE_GPU();
  const ModelConsts v4 = ModelConstsFor(ModelKind::kV4);
  std::vector<std::pair<uint64_t, CaseBatch>> steps;
  GpuSuiteCapacity capacity = TestCapacity();  // grown to hold every step (V4's blocks are 256 tokens)
  for (uint64_t seed : {1u, 2u, 4u})
    for (SeedCase c : kAllSeedCases) {
      CaseOptions o;
      o.seed = seed;
      o.consts = v4;
      steps.emplace_back(seed, MustMake(c, o));
      const BatchSizes& z = steps.back().second.sizes;
      capacity.max_tokens = std::max({capacity.max_tokens, z.capacity, z.num_tokens});
      capacity.max_reqs = std::max(capacity.max_reqs, z.num_reqs);
      capacity.max_bt_stride = std::max(capacity.max_bt_stride, z.bt_stride);
    }
  absl::StatusOr<std::unique_ptr<GpuSuite>> gpu = GpuSuite::Create(capacity, v4);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  int compared = 0;
  for (const auto& [seed, b] : steps) {
      const absl::Status staged = (*gpu)->Stage(b.Inputs());
      ASSERT_TRUE(staged.ok()) << b.name << ": " << staged;
      CpuSuite cpu(v4);
      for (Impl impl : ImplsOfModel(ModelKind::kV4)) {
        const std::string what = b.name + " seed " + std::to_string(seed) + " " + std::string(ImplName(impl));
        ASSERT_TRUE((*gpu)->Run(impl).ok()) << what;
        const absl::StatusOr<SuiteRunResult> got = WholeBufferCheck(**gpu, impl);
        ASSERT_TRUE(got.ok()) << what << ": " << got.status();
        const absl::StatusOr<SuiteRunResult> emulated = cpu.Run(impl, b.Inputs());
        ASSERT_TRUE(emulated.ok()) << what << ": " << emulated.status();
        for (const FieldMismatch& m : got->mismatches) {
          EXPECT_NE(m.kind, MismatchKind::kBug) << what << "\n" << DescribeMismatches(got->mismatches);
          if (m.kind == MismatchKind::kStaleHost) EXPECT_TRUE(ReadsHostBoundaries(impl)) << what;
        }
        // The device and the emulation find the same fields stale (padding residue depends on
        // each side's buffer history, so it is not compared).
        EXPECT_EQ(StaleFields(got->mismatches), StaleFields(emulated->mismatches)) << what;
        const OpCounters& n = (*gpu)->last_counters(impl);
        EXPECT_EQ(n.Launches(), emulated->counters.Launches()) << what;
        EXPECT_EQ(n.h2d_copies, emulated->counters.h2d_copies) << what;
        EXPECT_EQ(n.fills, emulated->counters.fills) << what;
        ++compared;
      }
    }
  EXPECT_EQ(compared, 3 * static_cast<int>(std::size(kAllSeedCases)) * static_cast<int>(ImplsOfModel(ModelKind::kV4).size()));
}

}  // namespace
}  // namespace dspark
