// The eight-case batch factory: determinism, the invariants every case must hold, which cases
// are stale and how, capture-size padding, and the in-place re-split used by replay tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/common/hd.h"
#include "kernels/suite/cases.h"
#include "tests/kernels/test_suite_util.h"

namespace dspark {
namespace {

using suite_test::MustMake;
using suite_test::OptionsFor;
using suite_test::RandomizedCases;
using suite_test::SuiteCaseParam;

class SeedCases : public ::testing::TestWithParam<SuiteCaseParam> {};

TEST_P(SeedCases, Deterministic) {
  const CaseBatch a = MustMake(GetParam().seed_case, GetParam().options);
  const CaseBatch b = MustMake(GetParam().seed_case, GetParam().options);
  EXPECT_EQ(a.qsl, b.qsl);
  EXPECT_EQ(a.seq_lens, b.seq_lens);
  EXPECT_EQ(a.block_table, b.block_table);
  EXPECT_EQ(a.slot_mapping, b.slot_mapping);
  EXPECT_EQ(a.host_qsl, b.host_qsl);
  EXPECT_EQ(a.host_seq_lens, b.host_seq_lens);
  CaseOptions other = GetParam().options;
  other.seed += 100;
  const CaseBatch c = MustMake(GetParam().seed_case, other);
  EXPECT_TRUE(c.seq_lens != a.seq_lens || c.block_table != a.block_table) << "the seed must matter";
}

TEST_P(SeedCases, HoldsTheBatchInvariants) {
  const SuiteCaseParam& p = GetParam();
  const CaseBatch b = MustMake(p.seed_case, p.options);
  const BatchSizes& z = b.sizes;
  ASSERT_TRUE(ValidateBatchSizes(z).ok()) << ValidateBatchSizes(z);
  const int32_t R = z.num_reqs, K = p.options.consts.spec_k;
  ASSERT_EQ(R, p.options.batch + p.options.padding_reqs);
  ASSERT_EQ(b.qsl.size(), static_cast<size_t>(R) + 1);
  ASSERT_EQ(b.host_qsl.size(), b.qsl.size());
  EXPECT_EQ(b.qsl[0], 0);
  EXPECT_EQ(b.host_qsl[0], 0);
  EXPECT_TRUE(std::is_sorted(b.qsl.begin(), b.qsl.end()));
  EXPECT_TRUE(std::is_sorted(b.host_qsl.begin(), b.host_qsl.end()));
  // Stale or not, the host holds the right totals.
  EXPECT_EQ(b.host_qsl[R], b.qsl[R]);
  EXPECT_EQ(b.host_qsl[z.num_decodes], b.qsl[z.num_decodes]);
  const int32_t M = b.qsl[R];
  EXPECT_LE(M, z.num_tokens);
  EXPECT_LE(b.qsl[z.num_decodes], z.num_decode_tokens);
  EXPECT_GE(z.capacity, std::max(z.num_tokens, z.num_decodes));
  for (int32_t r = 0; r < R; ++r) {
    const int32_t qlen = b.qsl[r + 1] - b.qsl[r];
    EXPECT_GE(b.seq_lens[r], qlen) << "request " << r << ": positions must be >= 0";
    EXPECT_GE(b.host_seq_lens[r], b.host_qsl[r + 1] - b.host_qsl[r]);
    // The host knows every context before the query; only a draft step's accepted count is
    // unknown to it, so it holds an upper bound there.
    const int32_t host_qlen = b.host_qsl[r + 1] - b.host_qsl[r];
    if (p.seed_case == SeedCase::kDraft || p.seed_case == SeedCase::kAdaptiveDraft)
      EXPECT_GE(b.host_seq_lens[r] - host_qlen, b.seq_lens[r] - qlen) << "request " << r;
    else
      EXPECT_EQ(b.host_seq_lens[r] - host_qlen, b.seq_lens[r] - qlen) << "request " << r;
    if (r >= p.options.batch) {
      EXPECT_EQ(qlen, 0) << "padding request " << r;
      EXPECT_EQ(b.seq_lens[r], 0);
    }
    EXPECT_LE(CeilDiv(std::max(b.seq_lens[r], b.host_seq_lens[r]), 64), z.bt_width) << "table covers request " << r;
  }
  EXPECT_GE(z.bt_stride, z.bt_width + p.options.bt_stride_slack);
  ASSERT_EQ(b.slot_mapping.size(), static_cast<size_t>(z.num_tokens));
  for (int32_t t = M; t < z.num_tokens; ++t) EXPECT_EQ(b.slot_mapping[t], -1) << "padding token " << t;
  // Which requests are decodes.
  switch (p.seed_case) {
    case SeedCase::kPrefill:
    case SeedCase::kChunkedPrefill:
      EXPECT_EQ(z.num_decodes, 0);
      EXPECT_EQ(z.num_decode_tokens, 0);
      break;
    case SeedCase::kMixed:
      EXPECT_EQ(z.num_decodes, std::max(p.options.batch - 1, 0));  // and one prefill chunk
      EXPECT_EQ(z.num_decode_tokens, z.num_decodes);  // one token each
      break;
    default:
      EXPECT_EQ(z.num_decodes, R);
      EXPECT_EQ(z.num_decode_tokens, z.num_tokens);
      break;
  }
  // Query lengths per case.
  for (int32_t r = 0; r < p.options.batch; ++r) {
    const int32_t qlen = b.qsl[r + 1] - b.qsl[r];
    switch (p.seed_case) {
      case SeedCase::kDecode: EXPECT_EQ(qlen, 1); break;
      case SeedCase::kVerify: EXPECT_EQ(qlen, 1 + K); break;
      case SeedCase::kAdaptiveVerify:
        EXPECT_GE(qlen, 1);
        EXPECT_LE(qlen, 1 + K);
        break;
      case SeedCase::kDraft: EXPECT_EQ(qlen, K); break;
      case SeedCase::kAdaptiveDraft:
        EXPECT_GE(qlen, 1);
        EXPECT_EQ(b.host_qsl[r + 1] - b.host_qsl[r], K);
        break;
      default: EXPECT_GE(qlen, 1); break;
    }
  }
  if (p.seed_case == SeedCase::kAdaptiveVerify)
    EXPECT_EQ(M, p.options.batch * (1 + p.options.adaptive_budget_per_req)) << "R + B tokens";
  if (p.seed_case == SeedCase::kDraft || p.seed_case == SeedCase::kAdaptiveDraft) EXPECT_EQ(M, p.options.batch * K);
  EXPECT_LE(M, std::max(p.options.max_num_batched_tokens, p.options.batch * (1 + K)));
}

TEST_P(SeedCases, StaleExactlyWhereTheCaseSaysHow) {
  const SuiteCaseParam& p = GetParam();
  const CaseBatch b = MustMake(p.seed_case, p.options);
  const bool split_stale = b.host_qsl != b.qsl;
  const bool seq_stale = b.host_seq_lens != b.seq_lens;
  switch (p.seed_case) {
    case SeedCase::kAdaptiveVerify:
      EXPECT_EQ(split_stale, p.options.batch >= 2);
      break;
    case SeedCase::kDraft:
      EXPECT_FALSE(split_stale);
      EXPECT_TRUE(seq_stale);  // request 0 always accepted fewer than K
      break;
    case SeedCase::kAdaptiveDraft:
      EXPECT_TRUE(seq_stale);
      if (p.options.batch >= 2) EXPECT_TRUE(split_stale);
      break;
    default:
      EXPECT_FALSE(split_stale);
      EXPECT_FALSE(seq_stale);
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(EightSeedCases, SeedCases, ::testing::ValuesIn(RandomizedCases()),
                         [](const auto& info) { return info.param.name; });

TEST(SeedCaseNames, RoundTrip) {
  for (SeedCase c : kAllSeedCases) {
    const absl::StatusOr<SeedCase> parsed = ParseSeedCase(SeedCaseName(c));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, c);
  }
  EXPECT_EQ(ParseSeedCase("decoding").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(SeedCaseName(SeedCase::kAdaptiveDraft)), "adaptive_draft");
}

TEST(CaptureSizesTest, PlainAndSpeculative) {
  const std::vector<int32_t> plain = GraphCaptureSizes(256, 8192, 0);
  ASSERT_GE(plain.size(), 4u);
  EXPECT_EQ(std::vector<int32_t>(plain.begin(), plain.begin() + 4), (std::vector<int32_t>{1, 2, 4, 8}));
  EXPECT_EQ(plain.back(), 512);  // min(256 * 1 * 2, 512)
  EXPECT_TRUE(std::binary_search(plain.begin(), plain.end(), 248));
  EXPECT_TRUE(std::binary_search(plain.begin(), plain.end(), 272));
  EXPECT_FALSE(std::binary_search(plain.begin(), plain.end(), 264));
  const std::vector<int32_t> spec = GraphCaptureSizes(256, 8192, 5);
  for (int32_t s : spec) EXPECT_EQ(s % 6, 0) << s;
  EXPECT_EQ(spec.front(), 6);
  EXPECT_TRUE(std::is_sorted(spec.begin(), spec.end()));
  EXPECT_EQ(std::adjacent_find(spec.begin(), spec.end()), spec.end()) << "no duplicates";
  // Small engines and small budgets cap the sizes.
  EXPECT_EQ(GraphCaptureSizes(2, 8192, 0).back(), 4);    // min(2 * 1 * 2, 512)
  EXPECT_EQ(GraphCaptureSizes(2, 8192, 5).back(), 24);   // min(2 * 6 * 2, 512)
  EXPECT_EQ(GraphCaptureSizes(256, 100, 0).back(), 96);

  EXPECT_EQ(PaddedTokenCount(16, plain), 16);
  EXPECT_EQ(PaddedTokenCount(13, plain), 16);
  EXPECT_EQ(PaddedTokenCount(17, plain), 24);
  EXPECT_EQ(PaddedTokenCount(96, spec), 96);
  EXPECT_EQ(PaddedTokenCount(64, spec), 66);
  EXPECT_EQ(PaddedTokenCount(513, plain), 513) << "past the largest size: eager, unpadded";
}

TEST(SeedCasesBatch16, MatchTheSeedShapes) {
  CaseOptions o;
  const CaseBatch decode = MustMake(SeedCase::kDecode, o);
  EXPECT_EQ(decode.sizes.num_tokens, 16);
  EXPECT_EQ(decode.sizes.num_reqs, 16);
  const CaseBatch verify = MustMake(SeedCase::kVerify, o);
  EXPECT_EQ(verify.sizes.num_tokens, 96);
  const CaseBatch adaptive = MustMake(SeedCase::kAdaptiveVerify, o);
  EXPECT_EQ(adaptive.qsl.back(), 64) << "docs/design.md s.8: adaptive verify with 64 tokens";
  EXPECT_EQ(adaptive.sizes.num_tokens, 66);
  const CaseBatch draft = MustMake(SeedCase::kDraft, o);
  EXPECT_EQ(draft.qsl.back(), 80);
  const CaseBatch prefill = MustMake(SeedCase::kPrefill, o);
  EXPECT_EQ(prefill.qsl[1], 2051) << "one request past two FP8 segments";
  EXPECT_LE(prefill.qsl.back(), o.max_num_batched_tokens);
}

TEST(ResplitDecodeTokensTest, SameTotalsOtherSplit) {
  for (SeedCase c : {SeedCase::kVerify, SeedCase::kAdaptiveVerify, SeedCase::kDraft, SeedCase::kAdaptiveDraft}) {
    for (uint64_t seed : {1, 2, 3}) {
      const CaseBatch b = MustMake(c, OptionsFor(seed));
      const absl::StatusOr<std::vector<int32_t>> q = ResplitDecodeTokens(b);
      ASSERT_TRUE(q.ok()) << b.name << ": " << q.status();
      ASSERT_EQ(q->size(), b.qsl.size());
      EXPECT_NE(*q, b.qsl) << b.name;
      EXPECT_EQ(q->back(), b.qsl.back());
      EXPECT_EQ((*q)[b.sizes.num_decodes], b.qsl[b.sizes.num_decodes]);
      for (int32_t r = 0; r < b.sizes.num_reqs; ++r) {
        const int32_t qlen = (*q)[r + 1] - (*q)[r];
        EXPECT_GE(qlen, 0);
        EXPECT_LE(qlen, b.seq_lens[r]) << b.name << " request " << r;
      }
    }
  }
  // One token per decode request and nothing to move: no other split.
  CaseOptions o;
  o.batch = 3;
  EXPECT_EQ(ResplitDecodeTokens(MustMake(SeedCase::kDecode, o)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(SeedCaseOptions, RejectsBadOptions) {
  CaseOptions o;
  o.batch = -1;
  EXPECT_EQ(MakeSeedCase(SeedCase::kDecode, o).status().code(), absl::StatusCode::kInvalidArgument);
  o.batch = 16;
  o.capacity = 10;  // below N = 16
  EXPECT_EQ(MakeSeedCase(SeedCase::kDecode, o).status().code(), absl::StatusCode::kInvalidArgument);
  o.capacity = 0;
  o.batch = 0;
  const CaseBatch empty = MustMake(SeedCase::kMixed, o);
  EXPECT_EQ(empty.sizes.num_tokens, 0);
  EXPECT_NE(empty.Inputs().device.seq_lens, nullptr) << "buffers exist even when empty";
}

}  // namespace
}  // namespace dspark
