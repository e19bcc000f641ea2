#include "sim/config.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/topb_alloc.cuh"
#include "sim/acceptance.h"

namespace dspark::sim {

absl::Status RunConfig::Validate() const {
  const SchedulerConfig& s = scheduler;
  if (trace_path.empty() == workload.empty())
    return absl::InvalidArgumentError(
        "give exactly one of --trace PATH and --workload NAME (speed-8k, batch1-512, chat)");
  if (s.max_num_seqs < 1)
    return absl::InvalidArgumentError(absl::StrCat("--max-num-seqs: expected >= 1, got ", s.max_num_seqs));
  if (s.max_model_len < 2)
    return absl::InvalidArgumentError(absl::StrCat("--max-model-len: expected >= 2, got ", s.max_model_len));
  if (s.spec_k < 1 || s.spec_k > std::min(kMaxSpecK, kTopBMaxK))
    return absl::OutOfRangeError(absl::StrFormat("spec_k=%d must be in [1, %d]", s.spec_k,
                                                 std::min(kMaxSpecK, kTopBMaxK)));
  const int32_t per_seq = s.mode == SpecMode::kNone ? 1 : 1 + s.spec_k;
  if (int64_t{s.max_num_batched_tokens} < int64_t{s.max_num_seqs} * per_seq)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--max-num-batched-tokens=%d cannot hold one step of %d running requests with %d tokens "
        "each (mode %s); need >= %d",
        s.max_num_batched_tokens, s.max_num_seqs, per_seq, SpecModeName(s.mode),
        int64_t{s.max_num_seqs} * per_seq));
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
  const int64_t per_req_blocks = (int64_t{s.max_model_len} + s.block_size - 1) / s.block_size;
  if (s.num_kv_blocks != 0 && s.num_kv_blocks < per_req_blocks + 1)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--num-kv-blocks=%d cannot hold one request of max_model_len=%d tokens (%d blocks of %d, "
        "plus the null block 0): need 0 (auto) or >= %d",
        s.num_kv_blocks, s.max_model_len, per_req_blocks, s.block_size, per_req_blocks + 1));
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
