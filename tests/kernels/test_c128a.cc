// DeepSeek-V4's C128A top-k metadata: the reference on a hand-computed step, and the kernel
// (its CPU path and its per-thread emulation) equal to the reference on it.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/c128a.cuh"
#include "kernels/common/backend.h"
#include "kernels/reference/c128a.h"

namespace dspark {
namespace {

// Request 0 decodes one token at position 299 (300 tokens: 2 compressed entries); request 1
// prefills 3 tokens at positions 254..256 (1, 1, 2 entries); then one graph-padding token.
// Blocks of 256 tokens hold 2 ratio-128 entries.
struct Step {
  std::vector<int32_t> qsl = {0, 1, 4};
  std::vector<int32_t> seq = {300, 257};
  std::vector<int32_t> bt = {7, 8, 11, 12};  // [2, 2]
  std::vector<int64_t> slots = {5, 6, 7, 8, -1};
  BatchSizes sizes() const {
    BatchSizes z;
    z.num_reqs = 2;
    z.num_tokens = 5;
    z.num_decodes = 1;
    z.num_decode_tokens = 1;
    z.capacity = 8;
    z.bt_width = 2;
    z.bt_stride = 2;
    return z;
  }
  DeviceBatch device() const { return DeviceBatch{qsl.data(), seq.data(), bt.data(), slots.data()}; }
};

TEST(C128a, ReferenceByHand) {
  const Step st;
  const ref::C128aTopk r = ref::C128aTopkRef(st.sizes(), st.device(), 128, 256);
  ASSERT_EQ(r.decode_indices.size(), 128u);
  EXPECT_EQ(r.decode_indices[0], 14);  // block 7, entry 0
  EXPECT_EQ(r.decode_indices[1], 15);  // block 7, entry 1
  EXPECT_EQ(r.decode_indices[2], -1);
  EXPECT_EQ(r.decode_lens, std::vector<int32_t>({2}));
  ASSERT_EQ(r.prefill_indices.size(), 4u * 128u);
  // positions 254, 255, 256 -> 1, 2, 2 entries; the padding token (position 0) none.
  EXPECT_EQ(r.prefill_indices[0 * 128 + 0], 0);
  EXPECT_EQ(r.prefill_indices[0 * 128 + 1], -1);
  EXPECT_EQ(r.prefill_indices[1 * 128 + 1], 1);
  EXPECT_EQ(r.prefill_indices[2 * 128 + 1], 1);
  EXPECT_EQ(r.prefill_indices[2 * 128 + 2], -1);
  EXPECT_EQ(r.prefill_indices[3 * 128 + 0], -1);
}

TEST(C128a, ReferenceUnstoredTokenHasNoLength) {
  Step st;
  st.slots[0] = -1;
  const ref::C128aTopk r = ref::C128aTopkRef(st.sizes(), st.device(), 128, 256);
  EXPECT_EQ(r.decode_lens, std::vector<int32_t>({0}));
  EXPECT_EQ(r.decode_indices[1], 15);  // the indices are still written
}

TEST(C128a, KernelEqualsReferenceOnBothCpuPaths) {
  for (bool paths : {true, false}) {
    const Step st;
    const std::vector<int32_t> t2r = {0, 1, 1, 1, 0};
    const int32_t stride = 256;  // wider than the width: cells past it stay untouched
    std::vector<int32_t> dec(5 * stride, -99), lens(5, -99), pre(5 * stride, -99);
    const C128aParams p{st.qsl.data(), st.seq.data(), t2r.data(), st.bt.data(), st.slots.data(), dec.data(),
                        lens.data(), pre.data(), 2, 5, 1, 2, 128, 256, 128, stride};
    ASSERT_TRUE(CanImplementC128a(p).ok());
    CpuPathsEnabled() = paths;
    CpuBackend be;
    be.Launch(C128aKernel{p}, C128aKernel::Shape(p));
    CpuPathsEnabled() = true;
    const ref::C128aTopk r = ref::C128aTopkRef(st.sizes(), st.device(), 128, 256);
    for (int32_t c = 0; c < 128; ++c) EXPECT_EQ(dec[c], r.decode_indices[c]) << c;
    EXPECT_EQ(dec[128], -99);
    EXPECT_EQ(lens[0], r.decode_lens[0]);
    for (int32_t row = 0; row < 4; ++row)
      for (int32_t c = 0; c < 128; ++c) EXPECT_EQ(pre[row * stride + c], r.prefill_indices[row * 128 + c]) << row;
  }
}

TEST(C128a, WidthFollowsTheLongestSequence) {
  const ModelConsts v4 = ModelConstsFor(ModelKind::kV4);
  EXPECT_EQ(C128aWidth(v4, 0), 128);
  EXPECT_EQ(C128aWidth(v4, 128 * 128), 128);
  EXPECT_EQ(C128aWidth(v4, 128 * 129), 256);
  EXPECT_EQ(C128aWidth(v4, int64_t{1} << 30), 8192);
}

}  // namespace
}  // namespace dspark
