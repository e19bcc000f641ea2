// Randomized batches of the eight seed cases, shared by the CPU-emulation and GPU suite tests.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/common/grid.h"
#include "kernels/suite/cases.h"

namespace dspark::suite_test {

struct SuiteCaseParam {
  std::string name;
  SeedCase seed_case;
  CaseOptions options;
};

inline void PrintTo(const SuiteCaseParam& p, std::ostream* os) { *os << p.name; }

// Options for seed `seed` of a case: batch 16 with an emulation-sized token budget; odd batch
// sizes, padding requests, strided and wider tables, unstored tokens and null first blocks; BF16
// segmentation with no capture padding and wide tables.
inline CaseOptions OptionsFor(uint64_t seed) {
  CaseOptions o;
  o.seed = seed;
  o.max_num_batched_tokens = 2048;
  switch (seed % 3) {
    case 1:
      break;
    case 2:
      o.batch = 1 + static_cast<int32_t>((seed * 7919) % 37);
      o.padding_reqs = 1 + static_cast<int32_t>(seed % 3);
      o.extra_bt_cols = 2;
      o.bt_stride_slack = 5;
      o.max_num_batched_tokens = 999;
      o.max_context = 5000;
      o.unstored_token_every = 7;
      o.null_first_block_every = 3;
      break;
    default:
      o.fp8_prefill = false;
      o.pad_to_capture_size = seed % 2 == 0;
      o.min_bt_width = 67;
      o.bt_stride_slack = 1;
      o.capacity = 3001;
      o.adaptive_budget_per_req = 2;
      break;
  }
  return o;
}

inline std::vector<SuiteCaseParam> RandomizedCases() {
  std::vector<SuiteCaseParam> out;
  for (SeedCase c : kAllSeedCases)
    for (uint64_t seed : {1, 2, 3, 5}) {
      const CaseOptions o = OptionsFor(seed);
      out.push_back({std::string(SeedCaseName(c)) + "_seed" + std::to_string(seed), c, o});
    }
  return out;
}

// Runs every kernel thread by thread (EmulateGridPerThread) while alive; the CPU paths come back
// when it goes, failed test or not.
struct PathsOff {
  PathsOff() { CpuPathsEnabled() = false; }
  ~PathsOff() { CpuPathsEnabled() = true; }
};

// Default constants with split_indexer_prefill_chunks' budgets replaced (small ones plan many
// request groups and query slices).
inline ModelConsts PrefillBudgets(int64_t workspace, int64_t max_logits) {
  ModelConsts c;
  c.indexer_prefill_workspace = workspace;
  c.indexer_max_logits = max_logits;
  return c;
}

inline CaseBatch MustMake(SeedCase c, const CaseOptions& o) {
  absl::StatusOr<CaseBatch> b = MakeSeedCase(c, o);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : CaseBatch{};
}

}  // namespace dspark::suite_test
