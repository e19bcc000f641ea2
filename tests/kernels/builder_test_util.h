// Test batches for the SWA, compressed-slot, compressor-ring and prefill-segmentation builders:
// a readable spec per case, expanded into host arrays shaped like one engine step.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/batch.h"

namespace dspark::testing_util {

struct BatchSpec {
  std::string name;
  std::vector<int32_t> qlens;     // query length per real request (0 allowed)
  std::vector<int32_t> prefixes;  // context before the query per real request: seq_len = prefix + qlen
  int32_t padding_reqs = 0;       // CUDA-graph padding requests appended: qlen 0, seq_len 0
  int32_t num_decodes = 0;        // leading requests that are decodes
  int32_t padding_tokens = 0;     // N - M
  int32_t capacity_slack = 0;     // capacity - N
  int32_t extra_cols = 3;         // block-table columns past the ones seq_lens needs
  int32_t stride_slack = 5;       // bt_stride - bt_width
  int32_t null_first_block_every = 0;  // every k-th request (r % k == 0) gets bt[r, 0] = 0; 0: never
  int32_t unstored_token_every = 0;    // every k-th real token gets slot_mapping -1; 0: never
  uint64_t seed = 1;              // block ids
};

inline void PrintTo(const BatchSpec& s, std::ostream* os) { *os << s.name; }

// Uniform draw in [0, n) from the engine's raw output (no std::*_distribution: not reproducible
// across standard libraries).
inline uint64_t Draw(std::mt19937_64& rng, uint64_t n) { return n == 0 ? 0 : rng() % n; }

// Host arrays of one step; `device()` views them as the device batch (CPU emulation) or as
// the source of an upload (GPU tests).
struct TestBatch {
  BatchSizes sizes;
  std::vector<int32_t> qsl;           // [R + 1]
  std::vector<int32_t> seq_lens;      // [R]
  std::vector<int32_t> block_table;   // [R, bt_stride]
  std::vector<int64_t> slot_mapping;  // [N]

  DeviceBatch device() const {
    return DeviceBatch{qsl.data(), seq_lens.data(), block_table.data(), slot_mapping.data()};
  }
  int32_t real_tokens() const { return qsl.back(); }
  int32_t ReqOf(int32_t t) const {
    int32_t r = 0;
    while (qsl[r + 1] <= t) ++r;
    return r;
  }
  int32_t PosOf(int32_t t) const {
    const int32_t r = ReqOf(t);
    return seq_lens[r] - (qsl[r + 1] - qsl[r]) + (t - qsl[r]);
  }
};

// Cells of a block table the builders must never read (past bt_width) hold this.
inline constexpr int32_t kUnreadBlockCell = -7777;
inline constexpr int32_t kBlockSize64 = 64;

inline TestBatch BuildBatch(const BatchSpec& spec) {
  TestBatch b;
  const int32_t real = static_cast<int32_t>(spec.qlens.size());
  const int32_t num_reqs = real + spec.padding_reqs;
  b.qsl.assign(num_reqs + 1, 0);
  b.seq_lens.assign(num_reqs, 0);
  for (int32_t r = 0; r < real; ++r) {
    b.qsl[r + 1] = b.qsl[r] + spec.qlens[r];
    b.seq_lens[r] = spec.prefixes[r] + spec.qlens[r];
  }
  for (int32_t r = real; r < num_reqs; ++r) b.qsl[r + 1] = b.qsl[r];
  const int32_t m = b.qsl.back();

  int32_t needed_cols = 1;
  for (int32_t s : b.seq_lens) needed_cols = std::max(needed_cols, (s + kBlockSize64 - 1) / kBlockSize64);
  BatchSizes& z = b.sizes;
  z.num_reqs = num_reqs;
  z.num_tokens = m + spec.padding_tokens;
  z.num_decodes = spec.num_decodes;
  z.num_decode_tokens = b.qsl[spec.num_decodes];
  z.capacity = z.num_tokens + spec.capacity_slack;
  z.bt_width = needed_cols + spec.extra_cols;
  z.bt_stride = z.bt_width + spec.stride_slack;

  std::mt19937_64 rng(spec.seed);
  b.block_table.assign(static_cast<size_t>(num_reqs) * z.bt_stride, kUnreadBlockCell);
  for (int32_t r = 0; r < num_reqs; ++r)
    for (int32_t c = 0; c < z.bt_width; ++c)
      b.block_table[static_cast<size_t>(r) * z.bt_stride + c] = 1 + static_cast<int32_t>(Draw(rng, 20000));
  if (spec.null_first_block_every > 0)
    for (int32_t r = 0; r < num_reqs; r += spec.null_first_block_every)
      b.block_table[static_cast<size_t>(r) * z.bt_stride] = 0;

  // The ordinary (ratio-1) KV slot of every real token; -1 for graph padding tokens.
  b.slot_mapping.assign(z.num_tokens, -1);
  for (int32_t r = 0; r < num_reqs; ++r) {
    for (int32_t t = b.qsl[r]; t < b.qsl[r + 1]; ++t) {
      const int32_t pos = b.seq_lens[r] - (b.qsl[r + 1] - b.qsl[r]) + (t - b.qsl[r]);
      const int64_t blk = b.block_table[static_cast<size_t>(r) * z.bt_stride + pos / kBlockSize64];
      b.slot_mapping[t] = blk * kBlockSize64 + pos % kBlockSize64;
    }
  }
  if (spec.unstored_token_every > 0)
    for (int32_t t = 0; t < m; t += spec.unstored_token_every) b.slot_mapping[t] = -1;
  // An engine's persistent buffers exist even in an empty step; an empty vector's data() may be
  // null, which the launchers' contracts reject.
  b.seq_lens.reserve(1);
  b.block_table.reserve(1);
  b.slot_mapping.reserve(1);
  return b;
}

// Rewrites qsl in place the way adaptive verification does: same total, real requests' lengths
// reversed, padding requests still empty. seq_lens stay, so the spec's prefixes must be at least
// the largest query length for positions to stay >= 0.
inline void ReverseRealLengths(TestBatch& b, int32_t real_reqs) {
  std::vector<int32_t> lens(real_reqs);
  for (int32_t r = 0; r < real_reqs; ++r) lens[r] = b.qsl[r + 1] - b.qsl[r];
  std::reverse(lens.begin(), lens.end());
  for (int32_t r = 0; r < real_reqs; ++r) b.qsl[r + 1] = b.qsl[r] + lens[r];
}

inline BatchSpec Uniform(std::string name, int32_t reqs, int32_t qlen, int32_t prefix) {
  BatchSpec s;
  s.name = std::move(name);
  s.qlens.assign(reqs, qlen);
  s.prefixes.assign(reqs, prefix);
  return s;
}

// A randomized batch with a fixed seed: zero-length, decode-like and long queries mixed,
// prefixes from 0 to 99000, padding requests and tokens, odd table widths.
inline BatchSpec RandomSpec(uint64_t seed, int32_t max_qlen = 600) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 7);
  BatchSpec s;
  s.name = "random_seed" + std::to_string(seed);
  s.seed = seed;
  const int32_t reqs = 1 + static_cast<int32_t>(Draw(rng, 24));
  for (int32_t r = 0; r < reqs; ++r) {
    int32_t q = 0;
    switch (Draw(rng, 4)) {
      case 0: q = 0; break;
      case 1: q = 1 + static_cast<int32_t>(Draw(rng, 6)); break;
      case 2: q = 7 + static_cast<int32_t>(Draw(rng, 130)); break;
      default: q = 1 + static_cast<int32_t>(Draw(rng, max_qlen)); break;
    }
    const int32_t prefix = Draw(rng, 8) == 0 ? 99000 - static_cast<int32_t>(Draw(rng, 500))
                                             : static_cast<int32_t>(Draw(rng, 3000));
    s.qlens.push_back(q);
    s.prefixes.push_back(prefix);
  }
  s.num_decodes = static_cast<int32_t>(Draw(rng, reqs + 1));
  s.padding_reqs = static_cast<int32_t>(Draw(rng, 4));
  s.padding_tokens = static_cast<int32_t>(Draw(rng, 9));
  s.capacity_slack = static_cast<int32_t>(Draw(rng, 300));
  s.extra_cols = static_cast<int32_t>(Draw(rng, 4));
  s.stride_slack = static_cast<int32_t>(Draw(rng, 7));
  s.null_first_block_every = static_cast<int32_t>(Draw(rng, 4));
  s.unstored_token_every = static_cast<int32_t>(Draw(rng, 5));
  return s;
}

// The hand-picked cases every per-token builder is checked on.
inline std::vector<BatchSpec> TokenBuilderSpecs() {
  std::vector<BatchSpec> v;
  // A single request of each odd/boundary token count, with a prefix so windows are not clipped
  // except where the prefix is 0.
  for (int32_t n : {0, 1, 2, 3, 7, 17, 65, 257}) {
    BatchSpec s = Uniform("one_req_" + std::to_string(n) + "_tokens", 1, n, n % 2 ? 0 : 131);
    s.padding_tokens = n % 5;
    s.capacity_slack = 11;
    v.push_back(s);
  }
  {
    BatchSpec s;
    s.name = "no_requests_padded";
    s.padding_tokens = 3;
    s.capacity_slack = 2;
    v.push_back(s);
  }
  {
    BatchSpec s;
    s.name = "zero_length_and_padding";
    s.qlens = {0, 5, 0, 1, 0, 17};
    s.prefixes = {40, 63, 0, 64, 9, 127};
    s.padding_reqs = 3;
    s.num_decodes = 2;
    s.padding_tokens = 5;
    s.capacity_slack = 1;
    s.extra_cols = 0;
    s.stride_slack = 3;
    s.null_first_block_every = 3;
    s.unstored_token_every = 4;
    v.push_back(s);
  }
  {
    BatchSpec s = Uniform("decode_batch16", 16, 1, 0);
    for (int32_t r = 0; r < 16; ++r) s.prefixes[r] = 37 * r + 63 * (r % 3);
    s.num_decodes = 16;
    s.padding_tokens = 0;
    s.null_first_block_every = 5;
    v.push_back(s);
  }
  {
    BatchSpec s = Uniform("dspark_verify_16x6", 16, 6, 0);
    for (int32_t r = 0; r < 16; ++r) s.prefixes[r] = 1 + 59 * r;
    s.num_decodes = 16;
    s.padding_tokens = 6;
    s.capacity_slack = 6;
    v.push_back(s);
  }
  {
    BatchSpec s;
    s.name = "mixed_decode_prefill";
    s.qlens = {4, 4, 2, 6, 1, 300, 0, 2051};
    s.prefixes = {100, 5, 64, 128, 0, 7, 50, 99000};
    s.num_decodes = 5;
    s.padding_reqs = 2;
    s.padding_tokens = 7;
    s.capacity_slack = 33;
    s.stride_slack = 0;
    v.push_back(s);
  }
  {
    // More requests than the shared-memory qsl cache holds: the global-search path.
    BatchSpec s;
    s.name = "over_shared_qsl_cap";
    for (int32_t r = 0; r < 1100; ++r) {
      s.qlens.push_back(r % 4 == 1 ? 0 : 1 + r % 3);
      s.prefixes.push_back((r * 17) % 300);
    }
    s.num_decodes = 1000;
    s.padding_reqs = 5;
    s.padding_tokens = 2;
    s.extra_cols = 1;
    s.stride_slack = 2;
    s.null_first_block_every = 7;
    s.unstored_token_every = 9;
    v.push_back(s);
  }
  for (uint64_t seed = 1; seed <= 8; ++seed) v.push_back(RandomSpec(seed));
  return v;
}

inline std::string SpecName(const ::testing::TestParamInfo<BatchSpec>& info) { return info.param.name; }

// Query lengths of the seed's segmentation cases, with one prefix per run.
inline BatchSpec SegmentSpec(std::string name, std::vector<int32_t> qlens, int32_t prefix,
                             int32_t num_decodes = 0, int32_t padding_reqs = 0) {
  BatchSpec s;
  s.name = std::move(name);
  s.qlens = std::move(qlens);
  s.prefixes.assign(s.qlens.size(), prefix);
  s.num_decodes = num_decodes;
  s.padding_reqs = padding_reqs;
  s.extra_cols = 0;
  s.stride_slack = 0;
  return s;
}

}  // namespace dspark::testing_util
