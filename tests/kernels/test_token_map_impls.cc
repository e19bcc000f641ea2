// CPU emulation of the three token_to_req_indices implementations (kernels/token_map_impls.h)
// and of the generic op kernels they chain (kernels/ops.cuh).
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "kernels/common/backend.h"
#include "kernels/ops.cuh"
#include "kernels/reference/token_map.h"
#include "kernels/suite/vllm_ops.h"
#include "kernels/token_map_impls.h"
#include "tests/kernels/metadata_cases.h"

namespace dspark {
namespace {

// Scratch for the chains' temporaries; the default 64 MiB arena costs more to page in than
// the tests take.
constexpr size_t kTestScratchBytes = size_t{8} << 20;

using testing_util::kPoison;
using testing_util::MappingCase;

// ---------------------------------------------------------------- the emulated staging arena

// The CPU backend accounts its host-to-device copies against the GPU's pinned staging arena, with
// the GPU's 256-byte alignment: a step that fits here fits there, and one that would exhaust it
// there fails here with ResourceExhausted, until the next ResetStaging.
TEST(CpuBackendStaging, CopiesAreAccountedAsTheGpuArenaWouldHoldThem) {
  CpuBackend be(kTestScratchBytes, /*staging_bytes=*/1024);
  std::vector<int32_t> host(100, 7), dev(100, 0);
  be.CopyToDevice(dev.data(), host.data(), 400);  // [0, 400)
  be.CopyToDevice(dev.data(), host.data(), 400);  // [512, 912)
  EXPECT_TRUE(be.status().ok()) << be.status();
  EXPECT_EQ(dev[99], 7);
  dev.assign(100, 0);
  be.CopyToDevice(dev.data(), host.data(), 4);  // aligned to 1024: past the end
  EXPECT_EQ(be.status().code(), absl::StatusCode::kResourceExhausted) << be.status();
  EXPECT_EQ(dev[0], 0) << "a copy that does not fit must not land";
  EXPECT_EQ(be.counters().h2d_copies, 3);

  CpuBackend fresh(kTestScratchBytes, /*staging_bytes=*/512);
  fresh.CopyToDevice(dev.data(), host.data(), 400);
  fresh.ResetStaging();
  fresh.CopyToDevice(dev.data(), host.data(), 400);
  EXPECT_TRUE(fresh.status().ok()) << fresh.status();
}

// ---------------------------------------------------------------- generic ops, one at a time

class ScanSize : public ::testing::TestWithParam<int32_t> {};

TEST_P(ScanSize, InclusiveScanMatchesSerialSum) {
  const int32_t n = GetParam();
  testing_util::TestRng rng(1234 + n);
  std::vector<int32_t> in(n), out(n + 1, kPoison);
  for (auto& v : in) v = rng.Uniform(-5, 300);
  CpuBackend be(kTestScratchBytes);
  const ops::InclusiveScanKernel k{in.data(), out.data(), n};
  be.Launch(k, k.Shape());
  std::vector<int32_t> expected(n);
  std::partial_sum(in.begin(), in.end(), expected.begin());
  expected.push_back(kPoison);  // one past the end stays untouched
  EXPECT_EQ(out, expected);
  EXPECT_EQ(be.counters().kernels, 1);
}

INSTANTIATE_TEST_SUITE_P(Sizes, ScanSize, ::testing::Values(0, 1, 2, 3, 7, 17, 65, 255, 256, 257, 1000, 4099),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

TEST(Ops, DiffArangeBinaryAddScalar) {
  const std::vector<int32_t> qsl{0, 0, 257, 258, 258, 261};
  std::vector<int32_t> lens(6, kPoison), ar(5, kPoison), sum(5, kPoison), plus(5, kPoison);
  EmulateGrid(ops::DiffKernel{qsl.data(), lens.data(), 5}, ops::ElementwiseShape(5));
  EXPECT_EQ(lens, (std::vector<int32_t>{0, 257, 1, 0, 3, kPoison}));
  EmulateGrid(ops::ArangeKernel{ar.data(), 5, 10}, ops::ElementwiseShape(5));
  EXPECT_EQ(ar, (std::vector<int32_t>{10, 11, 12, 13, 14}));
  EmulateGrid(ops::BinaryKernel{ar.data(), lens.data(), sum.data(), 5, ops::BinaryOp::kSub}, ops::ElementwiseShape(5));
  EXPECT_EQ(sum, (std::vector<int32_t>{10, -246, 11, 13, 11}));
  EmulateGrid(ops::BinaryKernel{ar.data(), lens.data(), sum.data(), 5, ops::BinaryOp::kAdd}, ops::ElementwiseShape(5));
  EXPECT_EQ(sum, (std::vector<int32_t>{10, 268, 13, 13, 17}));
  EmulateGrid(ops::AddScalarKernel{ar.data(), plus.data(), 5, -10}, ops::ElementwiseShape(5));
  EXPECT_EQ(plus, (std::vector<int32_t>{0, 1, 2, 3, 4}));
}

TEST(Ops, RepeatInterleaveWritesRangesAndClipsAtOutputSize) {
  const std::vector<int32_t> repeats{2, 0, 3, 1}, cumsum{2, 2, 5, 6};
  std::vector<int32_t> out(8, kPoison);
  EmulateGrid(ops::RepeatInterleaveKernel{repeats.data(), cumsum.data(), out.data(), 4, 8}, ops::ElementwiseShape(4));
  // output_size 8 > total 6: the last two entries are left as torch.empty leaves them.
  EXPECT_EQ(out, (std::vector<int32_t>{0, 0, 2, 2, 2, 3, kPoison, kPoison}));
  std::vector<int32_t> clipped(6, kPoison);
  EmulateGrid(ops::RepeatInterleaveKernel{repeats.data(), cumsum.data(), clipped.data(), 4, 4},
              ops::ElementwiseShape(4));
  EXPECT_EQ(clipped, (std::vector<int32_t>{0, 0, 2, 2, kPoison, kPoison}));
}

TEST(Ops, GatherAndGatherRowsZeroOutOfRangeIndices) {
  const std::vector<int32_t> src{5, 6, 7};
  const std::vector<int32_t> index{2, 0, -1, 3, 1};
  std::vector<int32_t> out(5, kPoison);
  EmulateGrid(ops::GatherKernel{src.data(), 3, index.data(), out.data(), 5}, ops::ElementwiseShape(5));
  EXPECT_EQ(out, (std::vector<int32_t>{7, 5, 0, 0, 6}));

  // src [3 rows, stride 4], 3 columns used; dst stride 5.
  const std::vector<int32_t> table{1, 2, 3, -1, 4, 5, 6, -1, 7, 8, 9, -1};
  const std::vector<int32_t> rows_index{2, 2, 5, 0};
  std::vector<int32_t> dst(4 * 5, kPoison);
  EmulateGrid(ops::GatherRowsKernel{table.data(), 3, 4, rows_index.data(), dst.data(), 5, 4, 3},
              ops::ElementwiseShape(12));
  const int32_t P = kPoison;
  EXPECT_EQ(dst, (std::vector<int32_t>{7, 8, 9, P, P, 7, 8, 9, P, P, 0, 0, 0, P, P, 1, 2, 3, P, P}));
}

TEST(Ops, Copy2DAndFillStridedRespectStrides) {
  const std::vector<int32_t> src{1, 2, 3, 4, 5, 6};  // [2, 3]
  std::vector<int32_t> dst(2 * 4, kPoison);
  EmulateGrid(ops::Copy2DKernel{src.data(), 3, dst.data(), 4, 2, 2}, ops::ElementwiseShape(4));
  const int32_t P = kPoison;
  EXPECT_EQ(dst, (std::vector<int32_t>{1, 2, P, P, 4, 5, P, P}));
  EmulateGrid(ops::FillStridedKernel{dst.data() + 1, 4, 2, 0}, ops::ElementwiseShape(2));
  EXPECT_EQ(dst, (std::vector<int32_t>{1, 0, P, P, 4, 0, P, P}));
}

// ---------------------------------------------------------------- the three mapping impls

enum class MapImpl { kHost, kDeviceChain, kFused };
constexpr MapImpl kMapImpls[] = {MapImpl::kHost, MapImpl::kDeviceChain, MapImpl::kFused};

std::string MapImplName(MapImpl i) {
  switch (i) {
    case MapImpl::kHost: return "host";
    case MapImpl::kDeviceChain: return "device_chain";
    case MapImpl::kFused: return "fused";
  }
  return "?";
}

absl::StatusOr<int32_t*> RunMapping(MapImpl impl, CpuBackend& be, const TokenMapArgs& a) {
  switch (impl) {
    case MapImpl::kHost: return TokenMapHost(be, a);
    case MapImpl::kDeviceChain: {  // state (c)'s chain, the code vllm-pre56562 and microbench run
      absl::StatusOr<const int32_t*> out = vllm_ops::TokenMapPre56562(be, a);
      if (!out.ok()) return out.status();
      return const_cast<int32_t*>(*out);
    }
    case MapImpl::kFused: return TokenMapFused(be, a);
  }
  return absl::InternalError("unknown impl");
}

TokenMapArgs ArgsFor(const MappingCase& c, std::vector<int32_t>& buffer) {
  return TokenMapArgs{c.qsl.data(), c.host_qsl.data(), c.num_reqs(), c.num_tokens, buffer.data(), c.buffer_len};
}

// Runs `impl` on a poisoned buffer; checks the returned pointer is the caller's buffer.
std::vector<int32_t> RunOnPoisoned(MapImpl impl, const MappingCase& c, OpCounters* counters = nullptr) {
  std::vector<int32_t> buffer(c.buffer_len, kPoison);
  CpuBackend be(kTestScratchBytes);
  const auto result = RunMapping(impl, be, ArgsFor(c, buffer));
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) EXPECT_EQ(*result, buffer.data()) << "the mapping must alias the caller's buffer";
  if (counters) *counters = be.counters();
  return buffer;
}

struct MapSeedParam {
  MappingCase c;
  MapImpl impl;
};

void PrintTo(const MapSeedParam& p, std::ostream* os) { *os << p.c.name << "/" << MapImplName(p.impl); }

class MappingSeed : public ::testing::TestWithParam<MapSeedParam> {};

TEST_P(MappingSeed, MatchesReferenceInPlace) {
  const auto& [c, impl] = GetParam();
  const std::vector<int32_t> before(c.buffer_len, kPoison);
  EXPECT_EQ(RunOnPoisoned(impl, c), testing_util::ExpectedMappingImage(c, c.qsl, before));
}

std::vector<MapSeedParam> MapSeedParams() {
  std::vector<MapSeedParam> out;
  for (const auto& c : testing_util::MappingSeedCases())
    for (MapImpl impl : kMapImpls) out.push_back({c, impl});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Seeds, MappingSeed, ::testing::ValuesIn(MapSeedParams()),
                         [](const auto& info) { return info.param.c.name + "_" + MapImplName(info.param.impl); });

TEST(MappingRandom, AllImplsMatchReferenceAndLeaveTheRestOfTheBuffer) {
  for (const auto& c : testing_util::MappingRandomCases(/*seed=*/20260704, /*count=*/120)) {
    const std::vector<int32_t> before(c.buffer_len, kPoison);
    const auto expected = testing_util::ExpectedMappingImage(c, c.qsl, before);
    for (MapImpl impl : kMapImpls) EXPECT_EQ(RunOnPoisoned(impl, c), expected) << c.name << " " << MapImplName(impl);
  }
}

// Launches per call, for M > 0 and M < N (the seed cases all have 7 padding tokens).
TEST(MappingLaunches, CountsPerImpl) {
  const auto c = testing_util::MappingSeedCases()[1];  // [0, 257, 1, 0, 3], N = 268
  OpCounters host, chain, fused;
  RunOnPoisoned(MapImpl::kHost, c, &host);
  RunOnPoisoned(MapImpl::kDeviceChain, c, &chain);
  RunOnPoisoned(MapImpl::kFused, c, &fused);
  // host: one pinned H2D copy + the tail fill; np.diff, np.arange, np.repeat on the host.
  EXPECT_EQ(host.h2d_copies, 1);
  EXPECT_EQ(host.fills, 1);
  EXPECT_EQ(host.kernels, 0);
  EXPECT_EQ(host.host_array_ops, 3);
  EXPECT_EQ(host.Launches(), 2);
  // (c)'s device chain (docs/states.md s.2.1): diff, arange, repeat_interleave's five (int64
  // cast, cub's tile init and scan, the compute kernel, index_select), copy_, zero_.
  EXPECT_EQ(chain.kernels, 7);
  EXPECT_EQ(chain.d2d_copies, 1);
  EXPECT_EQ(chain.fills, 1);
  EXPECT_EQ(chain.h2d_copies, 0);
  EXPECT_EQ(chain.Launches(), 9);
  EXPECT_EQ(fused.kernels, 1);
  EXPECT_EQ(fused.Launches(), 1);
  for (const OpCounters* k : {&host, &chain, &fused}) EXPECT_EQ(k->host_syncs, 0);

  // No padding: the fill is not issued.
  const auto full = testing_util::MakeMappingCase("full", {3, 0, 2}, {3, 0, 2}, 5, 5);
  RunOnPoisoned(MapImpl::kHost, full, &host);
  RunOnPoisoned(MapImpl::kDeviceChain, full, &chain);
  EXPECT_EQ(host.Launches(), 1);
  EXPECT_EQ(chain.Launches(), 8);
}

// DSpark adaptive verification: the device split is reversed, the host keeps the old one.
TEST(MappingStaleHost, HostPathDivergesDevicePathsDoNot) {
  int checked = 0;
  std::vector<MappingCase> cases;
  for (const auto& seed : testing_util::MappingSeedCases())
    if (testing_util::Reversed(seed.lens) != seed.lens) cases.push_back(seed);
  testing_util::TestRng rng(77);
  for (int i = 0; i < 20; ++i) {
    std::vector<int32_t> lens(rng.Uniform(2, 30));
    for (auto& l : lens) l = rng.Percent(20) ? 0 : rng.Uniform(1, 6);
    if (testing_util::Reversed(lens) == lens) continue;
    const int32_t m = std::accumulate(lens.begin(), lens.end(), 0);
    cases.push_back(testing_util::MakeMappingCase("rand" + std::to_string(i), lens, lens, m + 5, m + 5));
  }
  for (const auto& base : cases) {
    const MappingCase c = testing_util::MakeMappingCase(base.name + "_stale", testing_util::Reversed(base.lens),
                                                        base.lens, base.num_tokens, base.buffer_len);
    ASSERT_EQ(c.qsl.back(), c.host_qsl.back()) << "the host keeps the right total";
    const std::vector<int32_t> before(c.buffer_len, kPoison);
    const auto truth = testing_util::ExpectedMappingImage(c, c.qsl, before);
    const auto host_view = testing_util::ExpectedMappingImage(c, c.host_qsl, before);
    ASSERT_NE(truth, host_view) << c.name;
    const auto host = RunOnPoisoned(MapImpl::kHost, c);
    EXPECT_NE(host, truth) << c.name << ": host path must diverge under stale boundaries";
    EXPECT_EQ(host, host_view) << c.name << ": and diverge exactly as the host split says";
    EXPECT_EQ(RunOnPoisoned(MapImpl::kDeviceChain, c), truth) << c.name;
    EXPECT_EQ(RunOnPoisoned(MapImpl::kFused, c), truth) << c.name;
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(MappingValidation, RejectsBadArguments) {
  const auto c = testing_util::MappingSeedCases()[3];  // [2, 6, 4, 0], N = 19
  std::vector<int32_t> buffer(c.buffer_len, kPoison);
  CpuBackend be(kTestScratchBytes);
  TokenMapArgs a = ArgsFor(c, buffer);
  a.buffer_len = c.num_tokens - 1;
  for (MapImpl impl : kMapImpls) EXPECT_EQ(RunMapping(impl, be, a).status().code(), absl::StatusCode::kOutOfRange);
  a = ArgsFor(c, buffer);
  a.num_tokens = -1;
  EXPECT_EQ(TokenMapFused(be, a).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<int32_t> bad_host{0, 5, 3, 12, 12};
  a = ArgsFor(c, buffer);
  a.host_query_start_loc = bad_host.data();
  const auto s = TokenMapHost(be, a).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("host_query_start_loc"), std::string::npos) << s;
  a.host_query_start_loc = nullptr;
  EXPECT_EQ(vllm_ops::TokenMapPre56562(be, a).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(TokenMapFused(be, a).ok()) << "fused never reads the host boundaries";
  EXPECT_EQ(buffer, testing_util::ExpectedMappingImage(c, c.qsl, std::vector<int32_t>(c.buffer_len, kPoison)));
}

}  // namespace
}  // namespace dspark
