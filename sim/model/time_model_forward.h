// The target model's forward on the GPU as a roofline over the model's structure
// (docs/models.md, "Time model"). Per step of N tokens (padded tokens are computed too):
//
//   experts(N) = E * (1 - (1 - k/E)^N) + S     distinct routed experts touched per MoE layer by
//                                              N independently routed tokens, plus the shared
//   moe_us     = L * max(experts(N) * expert_bytes / (TP * BW),          weight reads
//                        2 * N * (k + S) * expert_params / (TP * F))     expert GEMM FLOPs
//   dense_us   = max(dense_params * dense_bytes_per_param / (TP * BW),
//                    (2 * N * dense_params + N * attn_flops_per_token
//                     + pairs * attn_flops_per_pair) / (TP * F))
//   kv_us      = sum(seq_lens) * kv_bytes_per_ctx_token / BW   (one KV head: every rank reads it)
//   rows_us    = row_latency_us_per_ctx_token * (pairs / N) * ceil(N / sm_count)
//   forward_us = floor_us + moe_us + dense_us + kv_us + rows_us
//
// BW and the peak FLOP rate are the GPU's data sheet figures; F = compute_efficiency * peak.
// rows_us is the latency of per-query-row attention work (the indexer's scoring and top-k over
// the compressed context, one row per SM at a time): its FLOPs and bytes are negligible, its
// latency is not. The structure comes from DeepSeek-V4-Flash's public configuration and the
// GB200's data sheet (sm_count: the B200's as commonly reported). floor_us and
// compute_efficiency are fitted on seed 000's batch-1 512/128 table and SPEED-Bench
// concurrency 1 only (scripts/fit_forward.py); row_latency_us_per_ctx_token is left at 0 there
// (the concurrency-1 iteration's GPU time is fitted to the drafter instead).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace dspark::sim {

struct RooflineForward {
  // Structure: DeepSeek-V4-Flash (43 layers, hidden 4096, 256 routed experts top-6 + 1 shared,
  // moe_intermediate 2048, FP4 experts, FP8 elsewhere), TP = 4 as seed 000 ran it.
  int32_t moe_layers = 43;
  int32_t routed_experts = 256;
  int32_t experts_per_token = 6;
  int32_t shared_experts = 1;
  double expert_params = 25165824.0;       // 3 * 4096 * 2048 (gate, up, down)
  double expert_bytes_per_param = 0.53125; // FP4 e2m1 + one e8m0 scale per 32 weights
  double dense_params = 5.799068114e9;     // active params outside the experts, less the embedding lookup
  double dense_bytes_per_param = 1.0;      // FP8
  double attn_flops_per_token = 2.130706432e9;  // 64 heads * 2048 FLOP * (43 * 128 window + 21 * 512 top-k keys)
  double attn_flops_per_pair = 106496.0;   // per context token: 20 HCA layers' ctx/128 keys + 21 indexer layers' ctx/4 scores
  double kv_bytes_per_ctx_token = 772.0;   // 20 * 640 B / 128 (HCA) + 21 * 128 B / 4 (indexer keys)
  int32_t tensor_parallel = 4;
  // GPU: GB200 (one Blackwell GPU), NVIDIA's data sheet.
  double hbm_tb_per_s = 8.0;
  double peak_tflops = 5000.0;             // FP8 dense
  int32_t sm_count = 148;
  // Fitted (scripts/fit_forward.py).
  double floor_us = 0;                     // [us] the step's latency floor (kernels, all-reduces)
  double compute_efficiency = 1.0;         // achieved fraction of peak_tflops
  double row_latency_us_per_ctx_token = 0; // [us per context token per wave of rows]
};

// The forward's terms, [us].
struct ForwardTerms {
  double floor_us = 0, moe_us = 0, dense_us = 0, kv_us = 0, rows_us = 0;
  double experts_touched = 0;  // per MoE layer, shared included
  double total_us() const { return floor_us + moe_us + dense_us + kv_us + rows_us; }
};

// `routed_tokens` is the number of tokens with distinct hidden states, which the router sends to
// independent experts: num_tokens in a real step (< 0 means that), 1 in vLLM's CUDA-graph
// capture, whose dummy tokens are all alike (scheduler.cc, CostCurves).
ForwardTerms RooflineTerms(const RooflineForward& r, int32_t num_tokens, int64_t sum_seq_lens,
                           double attn_pairs, int32_t routed_tokens = -1);

// Reads `forward.target_roofline` (every key optional over `r`'s values; unknown keys are errors).
absl::Status ReadRoofline(const std::string& path, const nlohmann::json& obj, RooflineForward* r);

}  // namespace dspark::sim
