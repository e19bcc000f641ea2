#include "sim/studies/config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <system_error>
#include <utility>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/batch.h"
#include "sim/model/kv_cache.h"
#include "kernels/common/status_macros.h"
#include "kernels/suite/impl_registry.h"
#include "kernels/topb_alloc.cuh"
#include "sim/model/acceptance.h"
#include "sim/results/out_folder.h"
#include "sim/results/source_tree.h"
#include "sim/workload/input_file.h"

namespace dspark::sim {

Impl DefaultTimeImpl(ModelKind model) {
  return model == ModelKind::kV41 ? Impl::kFused : ImplsOfModel(model).back();
}

int64_t RunConfig::KvGbBlocks() const {
  const double block_bytes = static_cast<double>(scheduler.block_size) * static_cast<double>(kKvBytesPerToken);
  const double fit = std::floor(kv_gb * 1e9 / block_bytes);
  // (a pool beyond int32 blocks is capped by ExecuteRun at what the run can use)
  return fit >= 2147483647.0 ? int64_t{2147483647} : static_cast<int64_t>(std::max(fit, 0.0));
}

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
  // No option sets the block size: it is the model's (--model), which the metadata kernels assume.
  if (s.block_size != ModelConstsFor(model).mla_block_size)
    return absl::InvalidArgumentError(absl::StrFormat(
        "block_size: expected %d (the KV block size of %s's metadata kernels; --model sets it), got %d",
        ModelConstsFor(model).mla_block_size, std::string(ModelName(model)), s.block_size));
  for (Impl impl : impls)
    if (!ImplRunsOn(impl, model))
      return absl::InvalidArgumentError(absl::StrCat("--impl: ", std::string(ImplKey(impl)), " builds ", ImplModels(impl),
                                                     ", not ", std::string(ModelName(model)), " (--model)"));
  if (!ImplRunsOn(time_impl, model))
    return absl::InvalidArgumentError(absl::StrCat("--time-impl: ", std::string(ImplKey(time_impl)), " builds ",
                                                   ImplModels(time_impl), ", not ", std::string(ModelName(model)), " (--model)"));
  if (!(kv_gb >= 0) || !std::isfinite(kv_gb))
    return absl::InvalidArgumentError(absl::StrFormat("--kv-gb: expected a finite size in GB >= 0, got %g", kv_gb));
  const int64_t per_req_blocks = (int64_t{s.max_model_len} + s.block_size - 1) / s.block_size;
  if (kv_gb > 0 && KvGbBlocks() < per_req_blocks + 1)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--kv-gb %g holds %d blocks of %d tokens at %d B per token; one request of max-model-len %d needs %d "
        "(with the null block): give at least --kv-gb %.3f",
        kv_gb, KvGbBlocks(), s.block_size, kKvBytesPerToken, s.max_model_len, per_req_blocks + 1,
        static_cast<double>(per_req_blocks + 1) * static_cast<double>(s.block_size * kKvBytesPerToken) / 1e9));
  // Every running request at max_model_len holds per_req_blocks; a larger pool is never used,
  // and would only be allocated (the free list is 4 bytes a block).
  const int64_t max_useful_blocks = per_req_blocks * s.max_num_seqs + 1;
  if (s.num_kv_blocks > max_useful_blocks)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--num-kv-blocks: expected at most max_num_seqs * ceil(max_model_len / %d) + 1 = %d * %d "
        "+ 1 = %d (every running request at max_model_len; more blocks are never used), got %d",
        s.block_size, s.max_num_seqs, per_req_blocks, max_useful_blocks, s.num_kv_blocks));
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
  // A gamma draw of shape b < 1 is Gamma(b + 1) * U^(1/b) (sim/rng.h): for tiny b, U^(1/b)
  // underflows to 0 and every gap would silently be 0.
  if (burstiness < kMinBurstiness)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--burstiness: expected >= %g, got %g (a gamma shape this small draws gaps that underflow "
        "to 0: every request would arrive at once)",
        kMinBurstiness, burstiness));
  if (!(time_scale >= 0) || !std::isfinite(time_scale))
    return absl::InvalidArgumentError(
        absl::StrCat("--time-scale: expected a finite factor >= 0, got ", time_scale));
  if (time_scale != 1.0 && (trace_path.empty() || request_rate_given))
    return absl::InvalidArgumentError(
        "--time-scale: scales a trace's own timestamps; it needs --trace and no finite "
        "--request-rate (which re-times every request)");
  if (num_requests == 0 || num_requests < -1)
    return absl::InvalidArgumentError(absl::StrCat("--num-requests: expected >= 1, got ", num_requests));
  // A generated workload allocates every request up front (a trace only keeps its first N).
  if (!workload.empty() && num_requests > kMaxGeneratedRequests)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--num-requests: expected at most %d for a generated workload (every request is "
        "allocated up front), got %d",
        kMaxGeneratedRequests, num_requests));
  if (impls.empty()) return absl::InvalidArgumentError("--impl: expected at least one implementation");
  if (executor != "cpu" && executor != "gpu")
    return absl::InvalidArgumentError(absl::StrCat("--executor: expected cpu or gpu, got '", Abbreviate(executor), "'"));
  if (out_dir.empty()) return absl::InvalidArgumentError("--out: expected a directory");
  // Output paths are checked before the run, not when its files are written at the end.
  std::error_code ec;
  if (std::filesystem::exists(out_dir, ec) && !std::filesystem::is_directory(out_dir, ec))
    return absl::InvalidArgumentError(
        absl::StrCat("--out: '", out_dir, "' exists and is not a directory; expected a directory"));
  for (const auto& [option, path] : {std::pair{"--step-log", &step_log},
                                     std::pair{"--dump-workload", &dump_workload},
                                     std::pair{"--dump-av", &dump_av}})
    if (!path->empty() && std::filesystem::is_directory(*path, ec))
      return absl::InvalidArgumentError(
          absl::StrCat(option, ": '", *path, "' is a directory; expected a file to write"));
  // No output may replace an input (a --dump-workload over the trace it was read from) or
  // another output (a --step-log over the run's summary.json).
  {
    const std::filesystem::path out(out_dir);
    std::vector<NamedPath> outputs = {
        {"--out's summary.json", out / "summary.json"}, {"--out's steps.csv", out / "steps.csv"},
        {"--out's requests.csv", out / "requests.csv"}, {"--out's perf.json", out / "perf.json"},
        {"--out's lock file", out / kOutLockName},      {"--step-log", step_log},
        {"--dump-workload", dump_workload},             {"--dump-av", dump_av}};
    if (!dump_steps.empty()) outputs.push_back({"--dump-steps's index.json", std::filesystem::path(dump_steps) / "index.json"});
    if (save_result)
      outputs.push_back({"--save-result's file",
                         std::filesystem::path(result_dir.empty() ? out_dir : result_dir) / ResultFilename(concurrency)});
    const std::vector<NamedPath> inputs = {{"--trace", trace_path},
                                           {"--calibration", calibration.empty() ? BundledCalibrationPath() : calibration},
                                           {"--config", config_file}};
    DS_RETURN_IF_ERROR(CheckOutputsApart(inputs, outputs));
    if (!dump_steps.empty())
      for (const NamedPath& in : inputs)
        if (!in.path.empty() && std::filesystem::path(dump_steps).lexically_normal() == in.path.lexically_normal())
          return absl::InvalidArgumentError(absl::StrCat("--dump-steps: '", dump_steps, "' is the ", in.what,
                                                         " input; expected a folder to write"));
  }
  if (steps_csv_stride < 1)
    return absl::InvalidArgumentError(absl::StrCat("--steps-csv-stride: expected >= 1, got ", steps_csv_stride));
  // A bound on the dump's size: each step is at most a few MB of arrays at the largest capacity.
  if (dump_steps_limit < 1 || dump_steps_limit > 1000000)
    return absl::InvalidArgumentError(
        absl::StrCat("--dump-steps-limit: expected an integer in [1, 1000000], got ", dump_steps_limit));
  if (dump_av_steps < 0)
    return absl::InvalidArgumentError(absl::StrCat("--dump-av-steps: expected >= 0 (0: all), got ", dump_av_steps));
  if (!dump_av.empty() && scheduler.mode != SpecMode::kAdaptive)
    return absl::InvalidArgumentError("--dump-av: records adaptive verification steps; expected --mode adaptive");
  return absl::OkStatus();
}

std::string RunConfig::ResultFilename(int32_t concurrency) const {
  if (!result_filename.empty()) return result_filename;
  // Python's str(float): "inf", "2.0", "0.5".
  std::string rate = std::isinf(request_rate) ? "inf" : absl::StrFormat("%.17g", request_rate);
  if (!std::isinf(request_rate) && rate.find_first_of(".e") == std::string::npos) rate += ".0";
  const std::string source =
      !workload.empty() ? workload : std::filesystem::path(trace_path).stem().string();
  return absl::StrCat("dspark-sim-", rate, "qps",
                      concurrency > 0 ? absl::StrCat("-concurrency", concurrency) : "", "-",
                      source, ".json");
}

nlohmann::json RunConfig::ToJson() const {
  std::vector<std::string> impl_names;
  for (Impl impl : impls) impl_names.emplace_back(ImplKey(impl));
  nlohmann::json j = {
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
      {"adaptive_mode", std::string(AdaptiveModeName(scheduler.adaptive_mode))},
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
      {"confidence_concentration", confidence_concentration},
      {"impl", impl_names},
      {"time_impl", std::string(ImplKey(time_impl))},
      {"check", check},
      {"executor", executor},
      {"gpu_l2", gpu_cold_l2 ? "cold" : "warm"},
      {"calibration", calibration},
      {"steps_csv_stride", steps_csv_stride},
  };
  // Only when not the defaults, so that a sweep point's id (a hash of this) stays the same.
  if (over_length != OverLength::kError) j["over_length"] = std::string(OverLengthName(over_length));
  if (time_scale != 1.0) j["time_scale"] = time_scale;
  if (model != ModelKind::kV41) j["model"] = std::string(ModelFlag(model));
  if (what_if_57207)
    j["what_if_57207"] = "what-if: the released vLLM states also build #57207's FP8 prefill segmentation, which no release has";
  // Adaptive runs say whose adaptive verification they follow (other modes have none).
  if (scheduler.mode == SpecMode::kAdaptive) {
    j["av_release"] = AvReleaseName(scheduler.av_release);
    j["av_tie_order"] = std::string(AvTieOrder(scheduler.av_release));
    j["adaptive_mode_label"] = std::string(AdaptiveModeLabel(scheduler.adaptive_mode));
  }
  if (scheduler.vocab_size != SchedulerConfig{}.vocab_size) j["vocab_size"] = scheduler.vocab_size;
  const ResultSpec defaults;
  if (result_spec.percentile_metrics != defaults.percentile_metrics)
    j["percentile_metrics"] = result_spec.percentile_metrics;
  if (result_spec.metric_percentiles != defaults.metric_percentiles)
    j["metric_percentiles"] = result_spec.metric_percentiles;
  if (!result_spec.goodput_ms.empty()) {
    nlohmann::json& g = j["goodput_ms"];
    for (const auto& [name, ms] : result_spec.goodput_ms) g[name] = ms;
  }
  return j;
}

}  // namespace dspark::sim
