// Lone launches of the kernels with a CPU path (CpuRun: kernels/common/grid.h) against the
// per-thread emulation on random steps: every cell of the whole output buffers (poisoned first,
// with slack past the written extent) byte-identical, and the SWA rows equal to the reference for
// block sizes down to 1 and up past the window (the block walk of SwaWriteRow, by 32 lanes on
// the per-thread path and by one lane on the CPU path).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/indexer_decode.cuh"
#include "kernels/prefill_segments.cuh"
#include "kernels/reference/prefill_segments.h"
#include "kernels/reference/swa.h"
#include "kernels/swa.cuh"
#include "kernels/topb_alloc.cuh"

namespace dspark {
namespace {

constexpr int32_t kPoison = -99;
constexpr int32_t kSlack = 7;  // [cells] past each buffer's written extent, must stay poisoned

int32_t Below(std::mt19937_64& rng, int32_t n) { return n <= 0 ? 0 : static_cast<int32_t>(rng() % n); }

// One random step: R requests (some zero-length), the first `decodes` with short queries, a
// block table wide enough for block size `bs`, and padding tokens past qsl[R].
struct Step {
  BatchSizes z;
  std::vector<int32_t> qsl, seq_lens, block_table;
  std::vector<int64_t> slot_mapping;
  DeviceBatch device() const { return {qsl.data(), seq_lens.data(), block_table.data(), slot_mapping.data()}; }
};

Step RandomStep(std::mt19937_64& rng, int32_t bs) {
  Step s;
  const int32_t reqs = 1 + Below(rng, 40);
  const int32_t decodes = Below(rng, reqs + 1);
  s.qsl.assign(reqs + 1, 0);
  s.seq_lens.assign(reqs, 0);
  int32_t longest = 1;
  for (int32_t r = 0; r < reqs; ++r) {
    const int32_t qlen = Below(rng, 5) == 0 ? 0 : (r < decodes ? 1 + Below(rng, 3) : 1 + Below(rng, 700));
    s.qsl[r + 1] = s.qsl[r] + qlen;
    s.seq_lens[r] = qlen == 0 ? Below(rng, 2) * Below(rng, 50) : qlen + Below(rng, 900);
    longest = std::max(longest, s.seq_lens[r]);
  }
  s.z.num_reqs = reqs;
  s.z.num_decodes = decodes;
  s.z.num_decode_tokens = s.qsl[decodes] + Below(rng, 4);
  s.z.num_tokens = std::max(s.qsl[reqs], s.z.num_decode_tokens) + Below(rng, 9);
  s.z.capacity = s.z.num_tokens + Below(rng, 600);
  s.z.bt_width = (longest + bs - 1) / bs + 1;
  s.z.bt_stride = s.z.bt_width + Below(rng, 4);
  s.block_table.resize(static_cast<size_t>(reqs) * s.z.bt_stride);
  for (int32_t& v : s.block_table) v = 1 + Below(rng, 5000);
  s.slot_mapping.resize(s.z.num_tokens);
  for (int64_t& v : s.slot_mapping) v = Below(rng, 6) == 0 ? -1 : Below(rng, 1 << 20);
  return s;
}

std::vector<int32_t> Poisoned(int64_t n) { return std::vector<int32_t>(static_cast<size_t>(n + kSlack), kPoison); }

// Runs `make(buffers)` thread by thread and by its CPU path over separately poisoned buffers and
// returns whether every buffer came out the same; `fast` keeps the CPU path's buffers.
template <typename Make>
void ExpectSameBuffers(std::vector<std::vector<int32_t>>& fast, const Make& make, const std::string& what) {
  std::vector<std::vector<int32_t>> slow = fast;
  const auto kf = make(fast), ks = make(slow);
  EmulateGrid(kf, std::decay_t<decltype(kf)>::Shape(kf.p));
  EmulateGridPerThread(ks, std::decay_t<decltype(ks)>::Shape(ks.p));
  for (size_t i = 0; i < fast.size(); ++i) EXPECT_EQ(fast[i], slow[i]) << what << ": buffer " << i;
}

TEST(CpuPathsLone, SwaRowsOfEveryBlockSizeEqualPerThreadAndReference) {
  std::mt19937_64 rng(5);
  for (int32_t bs : {1, 2, 3, 31, 32, 33, 64, 65, 96, 128, 200, 1000}) {
    for (int32_t window : {1, 7, 32, 128, 129}) {
      for (int32_t noncausal : {0, 192}) {
        const Step s = RandomStep(rng, bs);
        const int32_t width = noncausal > 0 ? noncausal : window;
        const int32_t rows = noncausal > 0 ? s.z.num_decode_tokens : s.z.num_tokens;
        std::vector<std::vector<int32_t>> out = {Poisoned(rows), Poisoned(int64_t{rows} * width)};
        const std::string what = "bs " + std::to_string(bs) + " window " + std::to_string(window) + " noncausal " +
                                 std::to_string(noncausal);
        ExpectSameBuffers(out, [&](std::vector<std::vector<int32_t>>& b) {
          SwaParams p{s.qsl.data(), s.seq_lens.data(), s.block_table.data(), nullptr, b[0].data(), b[1].data(),
                      s.z.num_reqs, rows, s.z.bt_stride, window, bs};
          p.noncausal_width = noncausal;
          p.slot_mapping = s.slot_mapping.data();
          EXPECT_TRUE(CanImplementSwa(p).ok());
          return SwaKernel{p};
        }, what);
        if (noncausal > 0) continue;
        const ref::SwaMetadata want = ref::Swa(s.z, s.device(), window, bs);
        EXPECT_TRUE(std::equal(want.lens.begin(), want.lens.end(), out[0].begin())) << what;
        EXPECT_TRUE(std::equal(want.indices.begin(), want.indices.end(), out[1].begin())) << what;
      }
    }
  }
}

TEST(CpuPathsLone, PrefillSegmentsEqualPerThreadAndReference) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 60; ++trial) {
    const Step s = RandomStep(rng, 64);
    const bool fp8 = trial % 2 == 0;
    const int32_t segment_len = trial % 3 == 0 ? 1024 : 1 + Below(rng, 300);
    const int32_t max_segments = PrefillSegmentBound(s.z.num_reqs - s.z.num_decodes, s.z.num_tokens, segment_len);
    std::vector<std::vector<int32_t>> out = {Poisoned(max_segments + 1), Poisoned(max_segments), Poisoned(2)};
    ExpectSameBuffers(out, [&](std::vector<std::vector<int32_t>>& b) {
      PrefillSegmentParams p{s.qsl.data(),  s.seq_lens.data(), b[0].data(), b[1].data(), b[2].data(),
                             s.z.num_reqs, s.z.num_decodes,   max_segments, segment_len, fp8, b[2].data() + 1};
      return PrefillSegmentKernel{p};
    }, "trial " + std::to_string(trial));
    const ref::PrefillSegments want = ref::Segments(s.z, s.device(), fp8, segment_len, max_segments);
    EXPECT_TRUE(std::equal(want.seg_qsl.begin(), want.seg_qsl.end(), out[0].begin())) << trial;
    EXPECT_TRUE(std::equal(want.seg_seq_lens.begin(), want.seg_seq_lens.end(), out[1].begin())) << trial;
    EXPECT_EQ(out[2][0], want.count);
    EXPECT_EQ(out[2][1], want.max_query_len);
  }
}

TEST(CpuPathsLone, IndexerDecodeEqualsPerThread) {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 60; ++trial) {
    const Step s = RandomStep(rng, trial % 2 == 0 ? 64 : 2);  // rows narrower and wider than the staging
    const int32_t out_stride = s.z.bt_width + Below(rng, 3);
    const int32_t nd = s.z.num_decodes, n_d = s.z.num_decode_tokens;
    std::vector<std::vector<int32_t>> out = {Poisoned(s.z.capacity), Poisoned(int64_t{n_d} * out_stride),
                                             Poisoned(n_d), Poisoned(n_d), Poisoned(nd)};
    ExpectSameBuffers(out, [&](std::vector<std::vector<int32_t>>& b) {
      IndexerDecodeParams p{s.qsl.data(), s.seq_lens.data(), s.block_table.data(), b[0].data(), b[1].data(),
                            b[2].data(),  b[3].data(),       b[4].data(),          nd,          n_d,
                            s.z.capacity, s.z.bt_width,      s.z.bt_stride,        out_stride,  trial % 2};
      EXPECT_TRUE(CanImplementIndexerDecode(p).ok()) << CanImplementIndexerDecode(p);
      return IndexerDecodeKernel::Make(p);
    }, "trial " + std::to_string(trial));
  }
}

// Scores with many ties, -0.0 beside 0.0, NaN and negative scores (both ineligible), budgets
// from 0 past the eligible count, prefill tails, base tokens above 1 and fewer logit requests
// than requests.
TEST(CpuPathsLone, TopBAllocEqualsPerThread) {
  std::mt19937_64 rng(21);
  const float odd[] = {-0.0f, 0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity()};
  for (int trial = 0; trial < 80; ++trial) {
    const int32_t max_k = 1 + Below(rng, kTopBMaxK);
    const int32_t nd = Below(rng, std::min(kTopBMaxDecodes, kTopBMaxSlots / max_k) + 1) / (trial % 3 == 0 ? 1 : 8);
    const int32_t tails = Below(rng, 5);
    std::vector<float> scores(static_cast<size_t>(nd) * max_k);
    for (float& v : scores) v = Below(rng, 9) == 0 ? odd[Below(rng, 5)] : 0.125f * static_cast<float>(Below(rng, 8));
    std::vector<int32_t> max_drafts(nd), tail(tails);
    for (int32_t& v : max_drafts) v = Below(rng, max_k + 1);
    for (int32_t j = 0, off = 0; j < tails; ++j) tail[j] = off += Below(rng, 300);
    const int32_t R = nd + tails;
    std::vector<std::vector<int32_t>> out = {Poisoned(R + 1), Poisoned(nd), Poisoned(R + 1)};
    const int32_t budget = Below(rng, nd * max_k + 3), base = 1 + Below(rng, 3), logit_reqs = nd + Below(rng, tails + 1);
    ExpectSameBuffers(out, [&](std::vector<std::vector<int32_t>>& b) {
      TopBAllocParams p{scores.data(), max_drafts.data(), tails > 0 ? tail.data() : nullptr, b[0].data(), b[1].data(),
                        nd, R, max_k, budget, base, b[2].data(), logit_reqs, 1 + trial % 2};
      EXPECT_TRUE(CanImplementTopBAlloc(p).ok()) << CanImplementTopBAlloc(p);
      return TopBAllocKernel{p};
    }, "trial " + std::to_string(trial));
  }
}

}  // namespace
}  // namespace dspark
