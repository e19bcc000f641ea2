// What the sim/observe/invariants tests break: the small adaptive config, two valid step plans
// and a valid KV pool.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/model/scheduler.h"
#include "sim/model/step_plan.h"
#include "sim/observe/invariants.h"

namespace dspark::sim::invariant_test {

// Adaptive, K = 5, 8 sequences, 256 tokens per step, 1024-token model length (16 blocks of
// 64). Capture sizes: max = min(8 * 6 * 2, 512) = 96, multiples of 6 up to it.
inline SchedulerConfig SmallConfig(SpecMode mode = SpecMode::kAdaptive) {
  SchedulerConfig c;
  c.mode = mode;
  c.spec_k = 5;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 256;
  c.max_model_len = 1024;
  c.block_size = 64;
  c.cuda_graphs = true;
  return c;
}

// A valid adaptive verification: 3 decodes, 15 eligible drafts, B = 4, so M = 7 tokens, padded
// to the capture size 12 with R = max(3, 12 / 6) = 3.
inline StepPlan AdaptiveVerifyPlan() {
  StepPlan p;
  p.index = 7;
  p.start_s = 1.0;
  p.end_s = 1.001;
  p.step_case = StepCase::kAdaptiveVerify;
  p.draft_step = false;
  p.graph_padded = true;
  p.host_view_stale = true;
  p.num_reqs_real = 3;
  p.num_reqs = 3;
  p.num_tokens_real = 7;
  p.num_tokens = 12;
  p.num_decodes = 3;
  p.num_decode_tokens = 12;
  p.num_prefills = 0;
  p.num_prefill_tokens = 0;
  p.capacity = 256;
  p.bt_width = 16;
  p.bt_stride = 16;
  p.draft_budget = 4;
  p.eligible_drafts = 15;
  return p;
}

// A valid chunked prefill of two requests, 200 tokens: unpadded (it has prefills).
inline StepPlan PrefillPlan() {
  StepPlan p = AdaptiveVerifyPlan();
  p.step_case = StepCase::kChunkedPrefill;
  p.graph_padded = false;
  p.host_view_stale = false;
  p.num_reqs_real = p.num_reqs = 2;
  p.num_tokens_real = p.num_tokens = 200;
  p.num_decodes = 0;
  p.num_decode_tokens = 0;
  p.num_prefills = 2;
  p.num_prefill_tokens = 200;
  p.draft_budget = -1;
  p.eligible_drafts = 0;
  return p;
}

// KV: 8 blocks, block 0 the null page; free 5..7, request 10 holds 1, 2; request 11 holds 3, 4.
struct KvState {
  std::vector<int32_t> free = {7, 6, 5};
  std::vector<int32_t> a = {1, 2};
  std::vector<int32_t> b = {3, 4};
  KvView View() const {
    KvView v;
    v.num_blocks = 8;
    v.free_blocks = &free;
    v.holders = {{10, &a}, {11, &b}};
    return v;
  }
};

}  // namespace dspark::sim::invariant_test
