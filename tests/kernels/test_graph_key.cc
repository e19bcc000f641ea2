// The one CUDA-graph key (kernels/suite/graph_key.h): the padded shape and flags, plus exactly the
// host values an implementation's traits say it reads. Two steps share a graph only when nothing
// the implementation's build reads differs; device values never join the key (the graph reads
// them on the device at replay).
#include "kernels/suite/graph_key.h"

#include <gtest/gtest.h>

#include <vector>

namespace dspark {
namespace {

// A decode-only step padded to N = 8 tokens: R requests with host qsl `host_qsl` (the device view
// is the same unless a test says otherwise).
struct Step {
  std::vector<int32_t> qsl, seq_lens, device_qsl;
  int32_t num_decodes = 0;
  BatchInputs Inputs() const {
    BatchInputs in;
    const int32_t R = static_cast<int32_t>(qsl.size()) - 1;
    in.sizes = BatchSizes{R, 8, num_decodes, num_decodes == R ? 8 : qsl[num_decodes], 64, 4, 6};
    in.host = HostBatch{qsl.data(), seq_lens.data()};
    in.device = DeviceBatch{device_qsl.empty() ? qsl.data() : device_qsl.data(), seq_lens.data(), nullptr, nullptr};
    return in;
  }
};

Step Decode(std::vector<int32_t> qsl) {
  Step s;
  s.qsl = std::move(qsl);
  s.num_decodes = static_cast<int32_t>(s.qsl.size()) - 1;
  for (size_t r = 0; r + 1 < s.qsl.size(); ++r) s.seq_lens.push_back(100 + s.qsl[r + 1] - s.qsl[r]);
  return s;
}

bool Shared(Impl impl, const Step& a, const Step& b) { return MakeGraphKey(impl, a.Inputs()) == MakeGraphKey(impl, b.Inputs()); }

TEST(GraphKey, TheSamePaddedShapeWithADifferentRealTokenTotalIsANewGraphForHostTotalReaders) {
  // R = 4 and N = 8 both times; 4 real tokens, then 3 (the last request padding, query length 0).
  const Step a = Decode({0, 1, 2, 3, 4}), b = Decode({0, 1, 2, 3, 3});
  ASSERT_EQ(a.Inputs().sizes.num_tokens, b.Inputs().sizes.num_tokens);
  ASSERT_EQ(a.Inputs().sizes.num_reqs, b.Inputs().sizes.num_reqs);
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    const ImplTraits& t = impl.info().traits;
    EXPECT_EQ(Shared(impl, a, b), !(t.reads_host_totals || t.reads_host_boundaries)) << ImplName(impl);
  }
  EXPECT_FALSE(Shared(Impl::kFused, a, b));
  EXPECT_FALSE(Shared(Impl::kDeviceChain, a, b));
  EXPECT_TRUE(Shared(Impl::kFusedSuite, a, b)) << "fused-suite reads no host value";
  EXPECT_EQ(MakeGraphKey(Impl::kFused, a.Inputs()).host_tokens, 4);
  EXPECT_EQ(MakeGraphKey(Impl::kFused, b.Inputs()).host_tokens, 3);
}

TEST(GraphKey, AHostDecodeMaximumJoinsTheKeyOfHostTotalReaders) {
  // The same totals (qsl[R] = qsl[nd] = 6); decode lengths 1, 1, 1, 3 then 2, 2, 1, 1.
  const Step a = Decode({0, 1, 2, 3, 6}), b = Decode({0, 2, 4, 5, 6});
  EXPECT_FALSE(Shared(Impl::kDeviceChain, a, b)) << "(c)'s indexer picks its ops by decode_lens_cpu.max()";
  EXPECT_FALSE(Shared(Impl::kFused, a, b));
  EXPECT_TRUE(Shared(Impl::kFusedSuite, a, b));
}

TEST(GraphKey, ADifferentHostSplitWithTheSameTotalsAndMaximumIsANewGraphOnlyForBoundaryReaders) {
  // Decode lengths 1, 2, 1, 2 then 2, 1, 2, 1: totals and maximum equal.
  const Step a = Decode({0, 1, 3, 4, 6}), b = Decode({0, 2, 3, 5, 6});
  EXPECT_TRUE(Shared(Impl::kFused, a, b)) << "(d) reads no per-request decode boundary";
  EXPECT_TRUE(Shared(Impl::kDeviceChain, a, b));
  EXPECT_FALSE(Shared(Impl::kChain, a, b)) << "(a) maps tokens from the host split";
  EXPECT_FALSE(Shared(Impl::kCached, a, b));
}

TEST(GraphKey, HostPrefillRowsJoinTheKeyOfHostReadersOnly) {
  Step a;
  a.qsl = {0, 1, 2, 300, 700};
  a.seq_lens = {50, 60, 300, 900};
  a.num_decodes = 2;
  Step b = a;
  b.seq_lens[3] = 901;  // the prefill chunk plan reads seq_lens_cpu of the prefill rows
  EXPECT_FALSE(Shared(Impl::kFused, a, b));
  EXPECT_FALSE(Shared(Impl::kDeviceChain, a, b));
  EXPECT_TRUE(Shared(Impl::kFusedSuite, a, b));
  Step c = a;
  c.seq_lens[0] = 51;  // a decode row's host seq_len: no implementation reads it
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) EXPECT_TRUE(Shared(impl, a, c)) << ImplName(impl);
  Step d = a;
  d.qsl = {0, 2, 2, 300, 700};  // the decode rows' host split: only the boundary readers read it
  EXPECT_FALSE(Shared(Impl::kChain, a, d));
  EXPECT_FALSE(Shared(Impl::kCached, a, d));
  EXPECT_FALSE(Shared(Impl::kFused, a, d)) << "its decode maximum changed (1 to 2)";
}

TEST(GraphKey, DeviceValuesAndTheSizesAndFlags) {
  Step a = Decode({0, 1, 2, 3, 4});
  Step b = a;
  b.device_qsl = {0, 2, 2, 3, 4};  // rewritten on the device: read there at replay, never frozen
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) EXPECT_TRUE(Shared(impl, a, b)) << ImplName(impl);
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    BatchInputs in = a.Inputs();
    const GraphKey base = MakeGraphKey(impl, in);
    in.sizes.bt_width = 5;
    EXPECT_NE(MakeGraphKey(impl, in), base) << ImplName(impl);
    in = a.Inputs();
    in.causal = false;
    EXPECT_NE(MakeGraphKey(impl, in), base) << ImplName(impl);
    in = a.Inputs();
    in.fp8_prefill = false;
    EXPECT_NE(MakeGraphKey(impl, in), base) << ImplName(impl);
    in = a.Inputs();
    in.host = HostBatch{};  // no host view: no host value in the key
    EXPECT_EQ(MakeGraphKey(impl, in).host_tokens, -1) << ImplName(impl);
  }
  EXPECT_EQ(MakeGraphKey(Impl::kFusedSuite, a.Inputs()).ToString(),
            "fused-suite R=4 N=8 nd=4 Nd=8 C=64 W=4 S=6 fp8=1 causal=1");
  EXPECT_EQ(MakeGraphKey(Impl::kFused, a.Inputs()).ToString().rfind("vllm-0.31 R=4 N=8 nd=4 Nd=8 C=64 W=4 S=6 fp8=1 "
                                                                      "causal=1 M_host=4 A_host=4 max_decode_host=1 ",
                                                                      0),
            0u);
}

}  // namespace
}  // namespace dspark
