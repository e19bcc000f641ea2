// The indexer's prefill path (the same in vLLM's states (c) and (d)): the host chunk split of
// split_indexer_prefill_chunks and BuildPrefillChunkMetadataKernel under CPU emulation, against
// the reference written from the semantics (kernels/reference/indexer_prefill.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/grid.h"
#include "kernels/indexer_prefill.cuh"
#include "kernels/reference/indexer_prefill.h"
#include "kernels/suite/vllm_ops.h"

namespace dspark {
namespace {

struct ChunkCase {
  std::string name;
  std::vector<int32_t> qlens, seq_lens;
  int32_t ratio = 1, slice_start = 0, slice_stop = 0;  // slice_stop 0: the whole chunk
};

ref::PrefillChunk RunKernel(const ChunkCase& c) {
  const int32_t n = static_cast<int32_t>(c.qlens.size());
  std::vector<int32_t> qsl(1, 0), cu(1, 0);
  for (int32_t b = 0; b < n; ++b) {
    qsl.push_back(qsl.back() + c.qlens[b]);
    cu.push_back(cu.back() + c.seq_lens[b] / c.ratio);  // what the cumsum of the chunk computes
  }
  const int32_t stop = c.slice_stop > 0 ? c.slice_stop : qsl.back();
  const int32_t kPoison = -7;
  std::vector<int32_t> token_to_seq(cu.back(), kPoison), ks(stop - c.slice_start, kPoison), ke = ks;
  const PrefillChunkMetadataParams p{qsl.data(), c.seq_lens.data(), cu.data(),    token_to_seq.data(),
                                     ks.data(),  ke.data(),         n,            c.slice_start,
                                     stop,       c.ratio,           cu.back()};
  EmulateGrid(PrefillChunkMetadataKernel{p}, PrefillChunkMetadataKernel::Shape(p));
  return ref::PrefillChunk{cu, token_to_seq, ks, ke};
}

std::vector<ChunkCase> Cases() {
  std::vector<ChunkCase> v = {
      {"one_request", {7}, {7}, 1, 0, 0},
      {"ratio2_odd", {3, 5}, {9, 1030}, 2, 0, 0},
      {"with_context", {17, 1, 65}, {1000, 2, 65}, 2, 0, 0},
      {"query_slice", {300, 257}, {99300, 257}, 1, 100, 400},
      {"slice_past_first", {300, 257}, {5000, 3000}, 2, 300, 557},
  };
  std::mt19937_64 rng(5);
  for (int k = 0; k < 6; ++k) {
    ChunkCase c;
    c.name = "random_" + std::to_string(k);
    const int32_t n = 1 + static_cast<int32_t>(rng() % 9);
    int32_t total = 0;
    for (int32_t b = 0; b < n; ++b) {
      const int32_t q = 1 + static_cast<int32_t>(rng() % 300);
      c.qlens.push_back(q);
      c.seq_lens.push_back(q + static_cast<int32_t>(rng() % 5000));
      total += q;
    }
    c.ratio = 1 + k % 2;
    c.slice_start = static_cast<int32_t>(rng() % total);
    c.slice_stop = c.slice_start + 1 + static_cast<int32_t>(rng() % (total - c.slice_start));
    v.push_back(c);
  }
  return v;
}

class IndexerPrefillChunk : public ::testing::TestWithParam<ChunkCase> {};

TEST_P(IndexerPrefillChunk, KernelEqualsReference) {
  const ChunkCase& c = GetParam();
  int32_t total = 0;
  for (int32_t q : c.qlens) total += q;
  const ref::PrefillChunk want =
      ref::IndexerPrefillChunk(c.qlens, c.seq_lens, c.ratio, c.slice_start, c.slice_stop > 0 ? c.slice_stop : total);
  const ref::PrefillChunk got = RunKernel(c);
  EXPECT_EQ(got.cu_seq_lens, want.cu_seq_lens);
  EXPECT_EQ(got.token_to_seq, want.token_to_seq);
  EXPECT_EQ(got.ks, want.ks);
  EXPECT_EQ(got.ke, want.ke);
}

INSTANTIATE_TEST_SUITE_P(Chunks, IndexerPrefillChunk, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

// By hand: the last token of a request sees every compressed row of it.
TEST(IndexerPrefillChunkByHand, LastTokenSeesTheWholeContext) {
  const ref::PrefillChunk r = ref::IndexerPrefillChunk({3, 2}, {10, 2}, 2, 0, 5);
  EXPECT_EQ(r.cu_seq_lens, (std::vector<int32_t>{0, 5, 6}));
  EXPECT_EQ(r.ke, (std::vector<int32_t>{4, 4, 5, 5, 6}));  // positions 7, 8, 9 then 0, 1
  EXPECT_EQ(r.ks, (std::vector<int32_t>{0, 0, 0, 5, 5}));
}

// split_indexer_prefill_chunks: greedy request chunks under the logits budget
// (512 MB of float32), a request too large alone split on its queries.
TEST(IndexerPrefillSplit, GreedyThenQuerySlices) {
  using vllm_ops::kIndexerMaxLogits;
  // Two small requests share a chunk.
  auto chunks = vllm_ops::SplitIndexerPrefillChunks({1000, 2000}, {10, 20});
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].first, std::make_pair(0, 2));
  EXPECT_EQ(chunks[0].second, std::make_pair(0, 30));
  // 2048 queries x 100000 rows exceed the budget alone: slices of budget // 100000 queries.
  chunks = vllm_ops::SplitIndexerPrefillChunks({100000, 10}, {2048, 5});
  const int32_t max_q = static_cast<int32_t>(kIndexerMaxLogits / 100000);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].first, std::make_pair(0, 1));
  EXPECT_EQ(chunks[0].second, std::make_pair(0, max_q));
  EXPECT_EQ(chunks[1].second, std::make_pair(max_q, 2048));
  EXPECT_EQ(chunks[2].first, std::make_pair(1, 2));
  EXPECT_EQ(chunks[2].second, std::make_pair(0, 5));
}

}  // namespace
}  // namespace dspark
