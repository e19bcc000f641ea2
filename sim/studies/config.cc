#include "sim/studies/config.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/batch.h"
#include "kernels/topb_alloc.cuh"
#include "sim/model/acceptance.h"

namespace dspark::sim {

absl::Status RunConfig::Validate() const {
  const SchedulerConfig& s = scheduler;
  if (trace_path.empty() == workload.empty())
    return absl::InvalidArgumentError(
        "give exactly one of --trace PATH and --workload NAME (speed-8k, batch1-512, chat)");
  // The scheduler reserves per-request state for every slot up front; far beyond any serving
  // setting, larger values only end in an allocation failure.
  constexpr int32_t kMaxNumSeqs = 1 << 20;
  if (s.max_num_seqs < 1 || s.max_num_seqs > kMaxNumSeqs)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--max-num-seqs: expected an integer in [1, %d], got %d", kMaxNumSeqs, s.max_num_seqs));
  // Trace rows are capped at kMaxTraceTokens, so no request can use a longer context.
  if (s.max_model_len < 2 || s.max_model_len > kMaxTraceTokens)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--max-model-len: expected an integer in [2, %d], got %d", kMaxTraceTokens, s.max_model_len));
  const int32_t max_k = std::min(kMaxSpecK, kTopBMaxK);
  if (s.spec_k < 1 || s.spec_k > max_k) {
    // K = 0 is how vLLM spells "no speculation"; here that is --mode none.
    if (s.mode == SpecMode::kNone)
      return absl::OutOfRangeError(absl::StrFormat(
          "--spec-k: expected K in [1, %d], got %d (with --mode none K is unused: leave --spec-k out)",
          max_k, s.spec_k));
    return absl::OutOfRangeError(absl::StrFormat(
        "--spec-k: expected K in [1, %d] with --mode %s, got %d%s", max_k, SpecModeName(s.mode),
        s.spec_k, s.spec_k == 0 ? " (K = 0 means no speculation: use --mode none)" : ""));
  }
  // One step holds every running request's decode (with speculation: K drafts to verify plus
  // one token). The persistent metadata buffers are sized max(this budget, largest capture
  // size), so this is also the check that their capacity holds one step.
  const int64_t step_tokens =
      int64_t{s.max_num_seqs} * (s.mode == SpecMode::kNone ? 1 : 1 + s.spec_k);
  if (s.max_num_batched_tokens < step_tokens) {
    if (s.mode == SpecMode::kNone)
      return absl::InvalidArgumentError(absl::StrFormat(
          "--max-num-batched-tokens: expected >= max_num_seqs = %d (one step must hold one decode "
          "token of every running request; mode none), got %d",
          step_tokens, s.max_num_batched_tokens));
    return absl::InvalidArgumentError(absl::StrFormat(
        "--max-num-batched-tokens: expected >= max_num_seqs * (1 + K) = %d * %d = %d (one step "
        "must hold K drafts to verify plus one token for every running request; mode %s), got %d",
        s.max_num_seqs, 1 + s.spec_k, step_tokens, SpecModeName(s.mode), s.max_num_batched_tokens));
  }
  if (s.mode == SpecMode::kAdaptive &&
      (s.max_num_seqs > kTopBMaxDecodes || s.max_num_seqs * s.spec_k > kTopBMaxSlots))
    return absl::OutOfRangeError(absl::StrFormat(
        "--max-num-seqs=%d: adaptive verification allocates drafts in one thread block, which "
        "holds at most %d requests and %d slots (max_num_seqs * K = %d)",
        s.max_num_seqs, kTopBMaxDecodes, kTopBMaxSlots, s.max_num_seqs * s.spec_k));
  if (s.mode != SpecMode::kNone && s.max_model_len < 2 * s.spec_k + 3)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--max-model-len=%d is too short for speculation with K=%d (need >= %d)", s.max_model_len,
        s.spec_k, 2 * s.spec_k + 3));
  // No option sets the block size: the metadata kernels assume ModelConsts::mla_block_size.
  if (s.block_size != ModelConsts{}.mla_block_size)
    return absl::InvalidArgumentError(absl::StrFormat(
        "block_size: expected %d (the KV block size of the metadata kernels; no option sets it), "
        "got %d",
        ModelConsts{}.mla_block_size, s.block_size));
  const int64_t per_req_blocks = (int64_t{s.max_model_len} + s.block_size - 1) / s.block_size;
  if (s.num_kv_blocks != 0 && s.num_kv_blocks < per_req_blocks + 1)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--num-kv-blocks=%d cannot hold one request of max_model_len=%d tokens (%d blocks of %d, "
        "plus the null block 0): need 0 (auto) or >= %d",
        s.num_kv_blocks, s.max_model_len, per_req_blocks, s.block_size, per_req_blocks + 1));
  // The metadata check and the GPU executor allocate every per-token output for a whole step
  // (a block-table row and an SWA window of int32 per token, per implementation). Bound them so
  // that a huge budget is an error here, not an allocation failure or a crawl (2^21 tokens at
  // max_model_len 16384 took 18 GB and 1 s per step on the CPU).
  constexpr int64_t kMaxMetadataCells = int64_t{1} << 26;
  const int64_t cells_per_token = int64_t{per_req_blocks} + ModelConsts{}.swa_window;
  if ((check || executor == "gpu") &&
      int64_t{s.max_num_batched_tokens} * cells_per_token > kMaxMetadataCells)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--max-num-batched-tokens: expected <= %d with --max-model-len %d, got %d (the metadata "
        "check allocates %d int32 per token of a step, a block-table row and an SWA window, and "
        "at most %d; with --no-check and --executor cpu there is no such limit)",
        kMaxMetadataCells / cells_per_token, s.max_model_len, s.max_num_batched_tokens,
        cells_per_token, kMaxMetadataCells));
  if (s.bt_stride_pad < 0)
    return absl::InvalidArgumentError(absl::StrCat("--bt-stride-pad: expected >= 0, got ", s.bt_stride_pad));
  // Limits the int32 sizes and indices of the scheduler and the step plans stay within.
  if (s.max_model_len > kMaxTraceTokens)
    return absl::OutOfRangeError(absl::StrFormat(
        "--max-model-len: expected <= %d (the longest prompt a trace may give), got %d",
        kMaxTraceTokens, s.max_model_len));
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  const int64_t bt_cells = (per_req_blocks + s.bt_stride_pad) * s.max_num_seqs;
  if (bt_cells > kInt32Max)
    return absl::OutOfRangeError(absl::StrFormat(
        "--max-num-seqs=%d rows of %d block-table entries (max_model_len / %d rounded up, plus "
        "--bt-stride-pad=%d) make %d entries, more than an int32 index reaches (%d)",
        s.max_num_seqs, per_req_blocks + s.bt_stride_pad, s.block_size, s.bt_stride_pad,
        bt_cells, kInt32Max));
  if (int64_t{s.max_num_seqs} * s.spec_k > kInt32Max)
    return absl::OutOfRangeError(absl::StrFormat(
        "--max-num-seqs=%d with K=%d makes %d draft slots, more than an int32 index reaches (%d)",
        s.max_num_seqs, s.spec_k, int64_t{s.max_num_seqs} * s.spec_k, kInt32Max));
  if (concurrency < -1)
    return absl::InvalidArgumentError(absl::StrCat("--concurrency: expected >= 0, got ", concurrency));
  if (!(request_rate > 0))
    return absl::InvalidArgumentError(absl::StrCat("--request-rate: expected > 0 (or inf), got ", request_rate));
  if (!(burstiness > 0) || !std::isfinite(burstiness))
    return absl::InvalidArgumentError(absl::StrCat("--burstiness: expected a finite value > 0, got ", burstiness));
  if (num_requests == 0 || num_requests < -1)
    return absl::InvalidArgumentError(absl::StrCat("--num-requests: expected >= 1, got ", num_requests));
  if (impls.empty()) return absl::InvalidArgumentError("--impl: expected at least one implementation");
  if (executor != "cpu" && executor != "gpu")
    return absl::InvalidArgumentError(absl::StrCat("--executor: expected cpu or gpu, got '", executor, "'"));
  if (out_dir.empty()) return absl::InvalidArgumentError("--out: expected a directory");
  if (steps_csv_stride < 1)
    return absl::InvalidArgumentError(absl::StrCat("--steps-csv-stride: expected >= 1, got ", steps_csv_stride));
  return absl::OkStatus();
}

nlohmann::json RunConfig::ToJson() const {
  std::vector<std::string> impl_names;
  for (Impl impl : impls) impl_names.emplace_back(ImplKey(impl));
  return {
      {"seed", seed},
      {"trace", trace_path},
      {"workload", workload},
      {"trace_format", std::string(TraceFormatName(trace_format))},
      {"skip_bad_rows", skip_bad_rows},
      {"concurrency", concurrency},
      {"request_rate", std::isinf(request_rate) ? nlohmann::json("inf") : nlohmann::json(request_rate)},
      {"burstiness", burstiness},
      {"num_requests", num_requests},
      {"mode", std::string(SpecModeName(scheduler.mode))},
      {"spec_k", scheduler.spec_k},
      {"max_num_seqs", scheduler.max_num_seqs},
      {"max_num_batched_tokens", scheduler.max_num_batched_tokens},
      {"max_model_len", scheduler.max_model_len},
      {"block_size", scheduler.block_size},
      {"num_kv_blocks", scheduler.num_kv_blocks},
      {"cuda_graphs", scheduler.cuda_graphs},
      {"bt_stride_pad", scheduler.bt_stride_pad},
      {"acceptance_preset", acceptance_preset},
      {"acceptance_curve", acceptance_curve},
      {"impl", impl_names},
      {"time_impl", std::string(ImplKey(time_impl))},
      {"check", check},
      {"executor", executor},
      {"gpu_l2", gpu_cold_l2 ? "cold" : "warm"},
      {"calibration", calibration},
      {"steps_csv_stride", steps_csv_stride},
  };
}

}  // namespace dspark::sim
