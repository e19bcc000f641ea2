// Steps by hand for fused-suite's prefill job tests (CPU: test_fused_suite_prefill*.cc, GPU:
// test_fused_suite_prefill_gpu.cu): decode requests, then prefill requests, then padding, with
// block tables that cover every position; and random layouts of many prefill requests.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/hd.h"
#include "kernels/suite/cases.h"
#include "kernels/token_map.cuh"

namespace dspark::suite_test {

struct Req {
  int32_t q, seq;
};

// A step by hand: decode requests (q, seq_len), then prefill requests, then `pad_reqs`
// zero-length requests; N = M + pad_tokens. Block tables cover every position.
inline CaseBatch HandStep(const std::vector<Req>& decodes, const std::vector<Req>& prefills, int32_t pad_reqs = 0,
                          int32_t pad_tokens = 0) {
  CaseBatch b;
  b.name = "hand";
  std::vector<Req> all = decodes;
  all.insert(all.end(), prefills.begin(), prefills.end());
  for (int32_t i = 0; i < pad_reqs; ++i) all.push_back({0, 0});
  const int32_t R = static_cast<int32_t>(all.size());
  b.qsl.assign(static_cast<size_t>(R) + 1, 0);
  int32_t longest = 1;
  for (int32_t r = 0; r < R; ++r) {
    b.qsl[r + 1] = b.qsl[r] + all[r].q;
    b.seq_lens.push_back(all[r].seq);
    longest = std::max(longest, all[r].seq);
  }
  BatchSizes& z = b.sizes;
  z.num_reqs = R;
  z.num_decodes = static_cast<int32_t>(decodes.size());
  z.num_decode_tokens = b.qsl[z.num_decodes];
  z.num_tokens = b.qsl[R] + pad_tokens;
  z.capacity = z.num_tokens + 5;
  z.bt_width = CeilDiv(longest, 64) + 1;
  z.bt_stride = z.bt_width + 2;
  for (int32_t i = 0; i < R * z.bt_stride; ++i) b.block_table.push_back(1 + (i * 7919) % 4093);
  for (int32_t t = 0; t < z.num_tokens; ++t) b.slot_mapping.push_back(t < b.qsl[R] ? 64 + t : -1);
  b.host_qsl = b.qsl;
  b.host_seq_lens = b.seq_lens;
  return b;
}

// Uniform in [0, n) (0 for n <= 0), from the raw engine (reproducible across standard libraries).
inline int32_t Below(std::mt19937_64& rng, int32_t n) {
  return n <= 0 ? 0 : static_cast<int32_t>(rng() % static_cast<uint64_t>(n));
}

// `n` prefill requests of one random layout kind, sized against `scale` KV rows (the workspace
// budget, small enough that block tables stay small):
//   0  many small requests (groups of many), some zero-length or without context;
//   1  a mix: small ones, zero-length ones (no query, no rows), single-row ones (no ratio-2 rows),
//      long ones past the workspace alone (groups of one, sliced into many chunks);
//   2  runs: stretches of one kind each (a long run of zero-row requests, a run of big ones).
// Query lengths stay small (the step's tokens stay few); contexts carry the KV rows.
inline std::vector<Req> RandomPrefills(std::mt19937_64& rng, int32_t n, int kind, int32_t scale) {
  const int32_t big = 4 * scale + 64;
  std::vector<Req> out;
  int32_t run_kind = 0, run_left = 0;
  for (int32_t i = 0; i < n; ++i) {
    int32_t pick = Below(rng, 10);
    if (kind == 0) pick = pick < 8 ? 0 : pick == 8 ? 1 : 2;
    if (kind == 1) pick = pick < 4 ? 0 : pick < 6 ? 1 : pick < 8 ? 2 : 3;
    if (kind == 2) {
      if (run_left == 0) {
        run_kind = Below(rng, 4);
        run_left = 1 + Below(rng, 40);
      }
      --run_left;
      pick = run_kind;
    }
    Req r{};
    switch (pick) {
      case 0: {  // small: a few query tokens over a short context
        r.q = 1 + Below(rng, 4);
        r.seq = r.q + Below(rng, std::max(scale / 8, 2));
        break;
      }
      case 1:  // zero-length: no query, maybe no context (a padding-like prefill row)
        r.q = 0;
        r.seq = Below(rng, 2) == 0 ? 0 : Below(rng, 30);
        break;
      case 2:  // one position: one ratio-1 row, no ratio-2 row
        r.q = Below(rng, 2);
        r.seq = 1;
        break;
      default:  // past the workspace alone
        r.q = 1 + Below(rng, 12);
        r.seq = r.q + scale + Below(rng, big);
        break;
    }
    out.push_back(r);
  }
  return out;
}

// Iteration `iter` of the many-prefill steps (the CPU test and its GPU twin run the same ones):
// a few hundred prefill requests, or just under kSharedQslCap (the in-block plan's longest
// chains), or past it (iteration 0: the walk's mode); small budgets, a workspace past INT32_MAX
// (iteration 2: the walk's mode too), the default budgets (iteration 3); decodes before the
// prefills or none, padding requests and tokens after.
inline constexpr uint64_t kManyPrefillSeed = 20261204;
inline constexpr int kManyPrefillSteps = 10;
// The GPU twin's persistent buffers (its steps are checked against them on the CPU too).
inline constexpr int32_t kManyPrefillMaxTokens = 8192, kManyPrefillMaxReqs = kSharedQslCap + 64,
                          kManyPrefillMaxBtStride = 1024;
struct ManyPrefillCase {
  CaseBatch batch;
  ModelConsts consts;
  std::string what;
};
inline ManyPrefillCase ManyPrefillStep(std::mt19937_64& rng, int iter) {
  // Iteration 1: at most 6 decodes and 2 padding requests, so R <= kSharedQslCap (the plan's mode).
  const int32_t n = iter == 0 ? kSharedQslCap + 40 : iter == 1 ? kSharedQslCap - 8 : 1 + Below(rng, 400);
  const int64_t workspace = iter == 2 ? int64_t{1} << 33 : std::vector<int64_t>{60, 900, 4000}[Below(rng, 3)];
  const int64_t max_logits = std::vector<int64_t>{300, 30000, 2000000}[Below(rng, 3)];
  ManyPrefillCase c;
  if (iter != 3) {
    c.consts.indexer_prefill_workspace = workspace;
    c.consts.indexer_max_logits = max_logits;
  }
  std::vector<Req> decodes;
  for (int32_t i = Below(rng, 3) * Below(rng, 4); i > 0; --i)
    decodes.push_back({1 + Below(rng, 3), 8 + Below(rng, 200)});
  const int32_t scale = static_cast<int32_t>(std::min<int64_t>(c.consts.indexer_prefill_workspace, 4000));
  const std::vector<Req> prefills = RandomPrefills(rng, n, iter % 3, scale);
  c.batch = HandStep(decodes, prefills, Below(rng, 3), Below(rng, 9));
  c.what = "iteration " + std::to_string(iter) + " prefills " + std::to_string(n) + " workspace " +
           std::to_string(c.consts.indexer_prefill_workspace) + " max_logits " +
           std::to_string(c.consts.indexer_max_logits);
  return c;
}

}  // namespace dspark::suite_test
