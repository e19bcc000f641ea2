// The builder suite on the GPU through GpuSuite: eager runs equal to the reference (host-boundary
// implementations diverging only where the host view is stale) with the same counts as the CPU
// emulation; captured graphs whose node count equals the counted launches; replays after the
// device boundaries were rewritten in place; fused == fused-suite on whole buffers; chain timed
// through CaptureForTiming (and why it cannot be captured for real).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/suite/cases.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/graph_key.h"
#include "kernels/suite/metadata_graph.h"
#include "kernels/suite/suite.h"
#include "tests/common/whole_buffer_check.cuh"
#include "tests/common/gpu_suite_capacity.cuh"
#include "tests/common/gpu_test_util.cuh"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;
using suite_test::RandomizedCases;
using suite_test::SuiteCaseParam;
using suite_test::TestCapacity;

std::unique_ptr<GpuSuite> MakeSuite() {
  absl::StatusOr<std::unique_ptr<GpuSuite>> s = GpuSuite::Create(TestCapacity());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

bool HasKind(const std::vector<FieldMismatch>& ms, MismatchKind kind) {
  return std::any_of(ms.begin(), ms.end(), [&](const FieldMismatch& m) { return m.kind == kind; });
}

// What the CPU emulation counts for the same step.
OpCounters CpuCounts(Impl impl, const CaseBatch& b) {
  CpuSuite cpu;
  const absl::StatusOr<SuiteRunResult> r = cpu.Run(impl, b.Inputs());
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->counters : OpCounters{};
}

void ExpectSameCounts(const OpCounters& gpu, const OpCounters& cpu, const std::string& what) {
  EXPECT_EQ(gpu.kernels, cpu.kernels) << what;
  EXPECT_EQ(gpu.h2d_copies, cpu.h2d_copies) << what;
  EXPECT_EQ(gpu.d2d_copies, cpu.d2d_copies) << what;
  EXPECT_EQ(gpu.fills, cpu.fills) << what;
  EXPECT_EQ(gpu.Launches(), cpu.Launches()) << what;
}

// The classification rules of a run (see tests/kernels/test_suite.cc for the CPU side).
void ExpectClassified(Impl impl, const CaseBatch& b, const std::vector<FieldMismatch>& ms) {
  EXPECT_FALSE(HasKind(ms, MismatchKind::kBug)) << DescribeMismatches(ms);
  EXPECT_EQ(HasKind(ms, MismatchKind::kStaleHost), ReadsHostBoundaries(impl) && b.host_qsl != b.qsl)
      << DescribeMismatches(ms);
  if (!impl.info().traits.old_indexer_chain) EXPECT_FALSE(HasKind(ms, MismatchKind::kPaddingResidue));
}

class SuiteGpu : public ::testing::TestWithParam<SuiteCaseParam> {};

TEST_P(SuiteGpu, EagerEqualsReferenceWithCpuCounts) {
  DS_REQUIRE_GPU();
  const CaseBatch b = MustMake(GetParam().seed_case, GetParam().options);
  std::unique_ptr<GpuSuite> gpu = MakeSuite();
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(gpu->Stage(b.Inputs()).ok());
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    SCOPED_TRACE(std::string(ImplName(impl)) + " on " + b.name);
    const absl::Status run = gpu->Run(impl);
    ASSERT_TRUE(run.ok()) << run;
    const absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*gpu, impl);
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectClassified(impl, b, r->mismatches);
    ExpectSameCounts(r->counters, CpuCounts(impl, b), b.name);
  }
}

// A captured graph holds exactly the operations the emulation counts: kernels (fills are
// kernels) and copies, nothing else; its replay equals the reference.
TEST_P(SuiteGpu, GraphNodesEqualCountedLaunchesAndReplayIsExact) {
  DS_REQUIRE_GPU();
  const CaseBatch b = MustMake(GetParam().seed_case, GetParam().options);
  std::unique_ptr<GpuSuite> gpu = MakeSuite();
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(gpu->Stage(b.Inputs()).ok());
  for (Impl impl : {Impl::kDeviceChain, Impl::kFused, Impl::kFusedSuite}) {
    SCOPED_TRACE(std::string(ImplName(impl)) + " on " + b.name);
    const absl::Status cap = gpu->Capture(impl);
    ASSERT_TRUE(cap.ok()) << cap;
    const absl::StatusOr<SuiteGraph::NodeCounts> nodes = gpu->GraphNodes(impl);
    ASSERT_TRUE(nodes.ok()) << nodes.status();
    const OpCounters cpu = CpuCounts(impl, b);
    EXPECT_EQ(static_cast<int64_t>(nodes->total), cpu.Launches());
    EXPECT_EQ(static_cast<int64_t>(nodes->kernels), cpu.kernels + cpu.fills);
    EXPECT_EQ(static_cast<int64_t>(nodes->memcpys), cpu.h2d_copies + cpu.d2h_copies + cpu.d2d_copies);
    EXPECT_EQ(nodes->memsets, 0u);
    EXPECT_EQ(nodes->other, 0u);
    if (impl == Impl::kFusedSuite) EXPECT_EQ(nodes->total, 1u);
    ASSERT_TRUE(gpu->Replay(impl).ok());
    const absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*gpu, impl);
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectClassified(impl, b, r->mismatches);
  }
}

INSTANTIATE_TEST_SUITE_P(EightSeedCases, SuiteGpu, ::testing::ValuesIn(RandomizedCases()),
                         [](const auto& info) { return info.param.name; });

// Capture with boundaries A, rewrite the device qsl in place with split B (same total), replay:
// the device-boundary implementations build B's metadata; the host still holds A, so the eager
// chain diverges and is classified stale-host. (Plain decode and mixed batches carry one token
// per decode request: no other split of the same total keeps every request's token.)
class SuiteGpuReplay : public ::testing::TestWithParam<SeedCase> {};

TEST_P(SuiteGpuReplay, FollowsDeviceBoundariesRewrittenInPlace) {
  DS_REQUIRE_GPU();
  CaseOptions o;
  o.seed = 31;
  o.padding_reqs = 2;
  o.max_num_batched_tokens = 2048;
  const CaseBatch b = MustMake(GetParam(), o);
  const absl::StatusOr<std::vector<int32_t>> resplit = ResplitDecodeTokens(b);
  ASSERT_TRUE(resplit.ok()) << resplit.status();
  ASSERT_NE(*resplit, b.qsl);
  std::unique_ptr<GpuSuite> gpu = MakeSuite();
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(gpu->Stage(b.Inputs()).ok());
  const std::vector<Impl> capturable = {Impl::kDeviceChain, Impl::kFused, Impl::kFusedSuite};
  for (Impl impl : capturable) {
    ASSERT_TRUE(gpu->Capture(impl).ok());
    ASSERT_TRUE(gpu->Replay(impl).ok());
    const absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*gpu, impl);
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectClassified(impl, b, r->mismatches);
  }
  const absl::StatusOr<SuiteImage> before = gpu->DownloadImage(Impl::kFusedSuite);
  ASSERT_TRUE(before.ok());

  ASSERT_TRUE(gpu->OverwriteDeviceQsl(*resplit).ok());
  for (Impl impl : capturable) {
    SCOPED_TRACE(std::string(ImplName(impl)));
    ASSERT_TRUE(gpu->Replay(impl).ok());
    const absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*gpu, impl);  // reference from the new qsl
    ASSERT_TRUE(r.ok()) << r.status();
    // (c) and (d) follow the device boundaries: no stale-host cell, only (c)'s padding residue.
    EXPECT_FALSE(HasKind(r->mismatches, MismatchKind::kBug)) << DescribeMismatches(r->mismatches);
    EXPECT_FALSE(HasKind(r->mismatches, MismatchKind::kStaleHost)) << DescribeMismatches(r->mismatches);
  }
  const absl::StatusOr<SuiteImage> after = gpu->DownloadImage(Impl::kFusedSuite);
  ASSERT_TRUE(after.ok());
  EXPECT_NE(before->token_to_req, after->token_to_req) << "the rewrite must change the mapping";

  for (Impl impl : {Impl::kChain, Impl::kCached}) {
    ASSERT_TRUE(gpu->Run(impl).ok());
    const absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*gpu, impl);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(HasKind(r->mismatches, MismatchKind::kStaleHost)) << ImplName(impl);
    EXPECT_FALSE(HasKind(r->mismatches, MismatchKind::kBug)) << DescribeMismatches(r->mismatches);
  }
}

INSTANTIATE_TEST_SUITE_P(DecodeLikeCases, SuiteGpuReplay,
                         ::testing::Values(SeedCase::kVerify, SeedCase::kAdaptiveVerify, SeedCase::kDraft,
                                           SeedCase::kAdaptiveDraft),
                         [](const auto& info) { return std::string(SeedCaseName(info.param)); });

// (d) and fused-suite equal the reference after a run of steps (eager and replayed) through
// every case.
TEST(SuiteGpuFusedSuite, MatchReferenceAcrossSteps) {
  DS_REQUIRE_GPU();
  std::unique_ptr<GpuSuite> gpu = MakeSuite();
  ASSERT_NE(gpu, nullptr);
  for (uint64_t seed : {1, 2, 3})
    for (SeedCase c : kAllSeedCases) {
      const CaseBatch b = MustMake(c, OptionsFor(seed));
      ASSERT_TRUE(gpu->Stage(b.Inputs()).ok());
      for (Impl impl : {Impl::kFused, Impl::kFusedSuite}) {
        ASSERT_TRUE((seed == 2 ? gpu->Capture(impl) : absl::OkStatus()).ok());
        ASSERT_TRUE((seed == 2 ? gpu->Replay(impl) : gpu->Run(impl)).ok());
        const absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*gpu, impl);
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_TRUE(r->mismatches.empty()) << b.name << " " << ImplName(impl) << "\n"
                                           << DescribeMismatches(r->mismatches);
      }
    }
}

// chain cannot be captured for real: its host work and the contents of its pinned copies freeze
// at capture. CaptureForTiming captures it anyway (for timing); a replay after the step changed
// replays the old host data and is wrong although the host view is fresh, and a re-capture
// updates the same executable graph in place.
TEST(SuiteGpuChain, CaptureForTimingReplaysCaptureTimeHostData) {
  DS_REQUIRE_GPU();
  CaseOptions o;
  o.max_num_batched_tokens = 2048;
  o.min_bt_width = 1600;  // both steps get the same sizes, hence the same graph key
  o.seed = 41;
  const CaseBatch a = MustMake(SeedCase::kVerify, o);
  o.seed = 42;
  const CaseBatch b = MustMake(SeedCase::kVerify, o);
  ASSERT_EQ(a.sizes.bt_width, b.sizes.bt_width);
  std::unique_ptr<GpuSuite> gpu = MakeSuite();
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(gpu->Stage(a.Inputs()).ok());
  EXPECT_EQ(gpu->Capture(Impl::kChain).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(gpu->Replay(Impl::kChain).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(gpu->CaptureForTiming(Impl::kChain).ok());
  const absl::StatusOr<SuiteGraph::NodeCounts> nodes = gpu->GraphNodes(Impl::kChain);
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(static_cast<int64_t>(nodes->total), CpuCounts(Impl::kChain, a).Launches());
  ASSERT_TRUE(gpu->Replay(Impl::kChain).ok());
  absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*gpu, Impl::kChain);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->mismatches.empty()) << DescribeMismatches(r->mismatches);

  ASSERT_TRUE(gpu->Stage(b.Inputs()).ok());
  ASSERT_TRUE(gpu->Replay(Impl::kChain).ok());  // still step a's host-side data
  r = WholeBufferCheck(*gpu, Impl::kChain);
  ASSERT_TRUE(r.ok());
  // (a) reads only the host split (its mapping); its builders read the device seq_lens and block
  // table like vLLM's. Both steps have the same uniform verification split, so the replayed
  // capture-time mapping is still right and the replay follows step b's device data exactly.
  EXPECT_TRUE(r->mismatches.empty()) << DescribeMismatches(r->mismatches);

  ASSERT_TRUE(gpu->CaptureForTiming(Impl::kChain).ok());
  const absl::StatusOr<const SuiteGraph*> graph = gpu->Graph(Impl::kChain);
  ASSERT_TRUE(graph.ok());
  EXPECT_EQ((*graph)->instantiations() + (*graph)->updates(), 2);
  EXPECT_GE((*graph)->updates(), 1) << "same topology: cudaGraphExecUpdate should take the new capture";
  ASSERT_TRUE(gpu->Replay(Impl::kChain).ok());
  r = WholeBufferCheck(*gpu, Impl::kChain);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->mismatches.empty()) << DescribeMismatches(r->mismatches);
}

// Two steps of one padded shape (R, N and every size equal) whose real token totals differ (the
// last real request of the second is graph padding, query length 0): an implementation that
// reads the host total gets a graph of its own for each, which replays exactly; one that reads
// no host value (fused-suite) shares one graph, which replays both exactly. "Exactly" allows the
// old indexer chain of (c) its padding residue (earlier data left in padding block-table rows),
// which is what vLLM's chain leaves too, and nothing else.
// vllm-0.34 as vLLM 0.34.0 runs it: the FULL uniform-decode step recorded with the KV-cache
// groups as concurrent branches (side streams forked and joined by events inside the capture).
// The graph holds exactly the operations the emulation counts (18: (d)'s 17 and the second
// branch's own token map), event edges and no other node; its replay, and the eager build on the
// branches, equal the reference. An adaptive verification step has no vLLM key.
TEST(SuiteGpuVllm034, RecordedGraphWithBranchesHoldsTheCountedLaunchesAndReplaysExactly) {
  DS_REQUIRE_GPU();
  CaseOptions o;
  o.seed = 4;
  o.capacity = TestCapacity().max_tokens;  // the suite's persistent buffers
  const CaseBatch b = MustMake(SeedCase::kDecode, o);
  ASSERT_TRUE(ReplaysRecordedGraph(Impl::kVllm034, b.Inputs()));
  const OpCounters cpu = CpuCounts(Impl::kVllm034, b);
  EXPECT_EQ(cpu.graph_launches, 1);
  EXPECT_EQ(cpu.Launches(), 18);
  std::unique_ptr<GpuSuite> gpu = MakeSuite();
  ASSERT_NE(gpu, nullptr);
  const absl::Status staged = gpu->Stage(b.Inputs());
  ASSERT_TRUE(staged.ok()) << staged;
  const absl::Status run = gpu->Run(Impl::kVllm034);  // eager, on the branches
  ASSERT_TRUE(run.ok()) << run;
  absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*gpu, Impl::kVllm034);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->mismatches.empty()) << DescribeMismatches(r->mismatches);
  ExpectSameCounts(r->counters, cpu, b.name);
  const absl::Status cap = gpu->Capture(Impl::kVllm034);
  ASSERT_TRUE(cap.ok()) << cap;
  const absl::StatusOr<SuiteGraph::NodeCounts> nodes = gpu->GraphNodes(Impl::kVllm034);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(static_cast<int64_t>(nodes->total), cpu.Launches());
  EXPECT_EQ(static_cast<int64_t>(nodes->kernels), cpu.kernels + cpu.fills);
  EXPECT_EQ(nodes->other, 0u);
  ASSERT_TRUE(gpu->Replay(Impl::kVllm034).ok());
  r = WholeBufferCheck(*gpu, Impl::kVllm034);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->mismatches.empty()) << DescribeMismatches(r->mismatches);
  EXPECT_FALSE(ReplaysRecordedGraph(Impl::kVllm034, MustMake(SeedCase::kAdaptiveVerify, o).Inputs()));
}

TEST(SuiteGpuGraphKey, ARealTokenTotalChangeIsANewGraphOnlyForHostTotalReaders) {
  DS_REQUIRE_GPU();
  CaseOptions o;
  o.batch = 12;
  o.padding_reqs = 1;
  o.capacity = TestCapacity().max_tokens;  // the suite's persistent buffers
  const CaseBatch a = MustMake(SeedCase::kDecode, o);
  CaseBatch b = a;
  const int32_t R = a.sizes.num_reqs, last = R - 2;  // the last real request (R - 1 is padding)
  ASSERT_EQ(a.qsl[R], a.qsl[R - 1]) << "request R - 1 is padding";
  ASSERT_EQ(a.qsl[last + 1] - a.qsl[last], 1);
  const int32_t t = a.qsl[last];  // its one token
  b.qsl[last + 1] = b.qsl[R] = t;
  b.host_qsl[last + 1] = b.host_qsl[R] = t;
  b.seq_lens[last] = b.host_seq_lens[last] = 0;
  b.slot_mapping[t] = -1;
  ASSERT_LT(a.qsl[R], a.sizes.num_tokens) << "a is padded";
  std::unique_ptr<GpuSuite> gpu = MakeSuite();
  ASSERT_NE(gpu, nullptr);
  for (Impl impl : {Impl::kFused, Impl::kDeviceChain, Impl::kFusedSuite}) {
    SCOPED_TRACE(std::string(ImplName(impl)));
    const absl::Status staged = gpu->Stage(a.Inputs());
    ASSERT_TRUE(staged.ok()) << staged;
    ASSERT_TRUE(gpu->Capture(impl).ok());
    ASSERT_TRUE(gpu->Replay(impl).ok());
    const auto exact = [&](const std::vector<FieldMismatch>& ms) {
      return std::all_of(ms.begin(), ms.end(), [&](const FieldMismatch& m) {
        return impl == Impl::kDeviceChain && m.kind == MismatchKind::kPaddingResidue;
      });
    };
    absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(*gpu, impl);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(exact(r->mismatches)) << DescribeMismatches(r->mismatches);
    ASSERT_TRUE(gpu->Stage(b.Inputs()).ok());
    EXPECT_EQ(gpu->Graph(impl).ok(), !ReadsHostTotals(impl)) << "a graph shared across the real totals";
    EXPECT_EQ(MakeGraphKey(impl, a.Inputs()) == MakeGraphKey(impl, b.Inputs()), !ReadsHostTotals(impl));
    ASSERT_TRUE(gpu->Capture(impl).ok());  // a no-op when shared
    ASSERT_TRUE(gpu->Replay(impl).ok());
    r = WholeBufferCheck(*gpu, impl);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(exact(r->mismatches)) << DescribeMismatches(r->mismatches);
  }
}

TEST(SuiteGpuInterface, RejectsWhatDoesNotFit) {
  DS_REQUIRE_GPU();
  std::unique_ptr<GpuSuite> gpu = MakeSuite();
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->Run(Impl::kFused).code(), absl::StatusCode::kFailedPrecondition);
  CaseOptions o;
  o.seed = 5;
  o.max_num_batched_tokens = 2048;
  o.capacity = TestCapacity().max_tokens + 1;
  const CaseBatch too_long = MustMake(SeedCase::kDecode, o);
  EXPECT_EQ(gpu->Stage(too_long.Inputs()).code(), absl::StatusCode::kOutOfRange);
  o.capacity = 0;
  o.batch = TestCapacity().max_reqs + 1;
  const CaseBatch too_many = MustMake(SeedCase::kDecode, o);
  EXPECT_EQ(gpu->Stage(too_many.Inputs()).code(), absl::StatusCode::kOutOfRange);
  o.batch = 4;
  const CaseBatch fine = MustMake(SeedCase::kDecode, o);
  ASSERT_TRUE(gpu->Stage(fine.Inputs()).ok());
  EXPECT_EQ(gpu->OverwriteDeviceQsl({0, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu->DownloadImage(Impl::kCached).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(GpuSuite::Create(GpuSuiteCapacity{0, 1, 1}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dspark
