// `run`'s options: the option table, --config files and the checks of ParseRunArgs (run.h).
#include "sim/studies/run.h"


#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <functional>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "kernels/common/status_macros.h"
#include "sim/model/acceptance.h"
#include "sim/exec/cuda_device.h"
#include "sim/engine/engine.h"
#include "sim/exec/executor_registry.h"
#include "sim/exec/step_dump.h"
#include "sim/observe/invariants.h"
#include "sim/observe/metrics.h"
#include "sim/options/option_errors.h"
#include "sim/results/result_files.h"
#include "sim/results/source_tree.h"
#include "sim/observe/step_log.h"
#include "sim/model/time_model.h"
#include "sim/options/option_text.h"
#include "sim/studies/workload.h"
#include "sim/workload/input_file.h"

namespace dspark::sim {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

po::options_description RunOptions() {
  po::options_description d("dspark-sim run: replay one workload through the simulator");
  // clang-format off
  d.add_options()
    ("help,h", "print this help")
    ("config", po::value<std::string>(), "read options from FILE (key = value lines, same keys; the command line wins; relative trace/calibration paths are relative to FILE)")
    ("seed", po::value<std::string>()->default_value("0"), "seed of every random draw (lengths, arrivals, acceptance)")
    ("trace", po::value<std::string>(), "replay this trace file (see workloads/TRACE_FORMATS.md)")
    ("workload", po::value<std::string>(), "generate a preset workload: speed-8k, batch1-512, chat")
    ("trace-format", po::value<std::string>()->default_value("auto"), "auto, azure, vidur, burstgpt, mooncake, jsonl; or burstgpt-lengths: BurstGPT as vLLM's benchmark reads it (GPT-4 rows, lengths only, arrivals from --request-rate)")
    ("skip-bad-rows", po::bool_switch(), "skip (and count) bad trace rows instead of stopping (over-length rows too: --over-length skip)")
    ("over-length", po::value<std::string>()->default_value("error"), "trace rows with prompt + output above --max-model-len: error (a bad row, as vLLM rejects it), skip (skipped and counted) or clip (cut to fit, as Vidur does; counted)")
    ("time-scale", po::value<double>()->default_value(1.0), "multiply a trace's arrival times by F (0.5 replays it twice as fast; the gaps' shape, its burstiness, is kept; 0: all at t=0)")
    ("concurrency", po::value<int32_t>()->default_value(-1), "client limit on requests in flight (0 = none; default: the workload's, batch1-512 is 1; above the request count it is the request count)")
    ("max-concurrency", po::value<int32_t>(), "vLLM's name of --concurrency")
    ("request-rate", po::value<std::string>(), "arrival rate [requests/s]; inf (any spelling: Inf, infinity, 1e999) re-times nothing: a trace keeps its timestamps, generated or length-only requests all arrive at t=0 (default inf)")
    ("burstiness", po::value<double>()->default_value(1.0), "gamma shape of the inter-arrival gaps (1 = Poisson)")
    ("num-requests", po::value<int64_t>()->default_value(-1), "requests to replay (default: preset default, or the whole trace)")
    ("num-prompts", po::value<int64_t>(), "vLLM's name of --num-requests")
    ("percentile-metrics", po::value<std::string>()->default_value("ttft,tpot,itl,e2el"), "metrics with mean_/median_/std_/p{N}_ keys in the result: comma list of ttft, tpot, itl, e2el")
    ("metric-percentiles", po::value<std::string>()->default_value("50,90,99"), "percentiles of those metrics, comma list (vLLM's default is 99)")
    ("goodput", po::value<std::vector<std::string>>()->multitoken(), "SLOs KEY:VALUE [ms], KEY one of ttft, tpot, e2el (e.g. --goodput ttft:200 tpot:50): request_goodput counts the requests that meet all of them")
    ("save-result", po::bool_switch(), "also write the result JSON (summary.json's content) to --result-dir/--result-filename, as vllm bench serve does")
    ("result-dir", po::value<std::string>(), "folder of --save-result's file (default: --out)")
    ("result-filename", po::value<std::string>(), "name of --save-result's file (default: dspark-sim-{rate}qps[-concurrency{C}]-{workload}.json)")
    ("mode", po::value<std::string>()->default_value("adaptive"), "none, dspark or adaptive (DSpark with adaptive verification)")
    ("adaptive-mode", po::value<std::string>()->default_value("varlen"), "adaptive verification: varlen (vLLM's: compact the batch) or masked (a what-if that no vLLM release has: pruned drafts become padding)")
    ("av-release", po::value<std::string>()->default_value("0.34.0"), "the vLLM release whose adaptive verification the run follows, 0.28.0 to 0.34.0 (they differ only in the allocation's tie order: 0.28-0.33 use torch.topk's unspecified one)")
    ("vocab-size", po::value<int32_t>()->default_value(129280), "target vocabulary: sizes the rejection sampler's logits chunk, which caps the adaptive budget")
    ("spec-k", po::value<int32_t>()->default_value(5), "DSpark speculative length K")
    ("model", po::value<std::string>()->default_value("v4.1"), "model layout: v4.1 (DeepSeek-V4.1) or v4 (DeepSeek-V4, 256-token KV blocks): only the states whose release shipped with it run (all = those)")
    ("impl", po::value<std::string>()->default_value("all"), absl::StrCat("implementations the metadata check runs: a comma list, or all (the model's), of\n", ImplHelpText()).c_str())
    ("time-impl", po::value<std::string>(), "implementation whose metadata cost (and host syncs) time the steps (default: the seed's After, vllm-0.31, on v4.1; the newest V4 release, vllm-0.29, on v4)")
    ("check", po::bool_switch(), "run every step's metadata through the implementations (default)")
    ("no-check", po::bool_switch(), "do not run the metadata check")
    ("executor", po::value<std::string>()->default_value("cpu"), "cpu: metadata emulated on the CPU (--check), costs from the time model; gpu: every step also runs through the kernels on the GPU (CUDA graphs per padded size, top-B on the device), timed and compared exactly (section gpu_executor of summary.json; needs a CUDA build and device)")
    ("gpu-l2", po::value<std::string>()->default_value("cold"), "executor gpu: cold (flush L2 before every timed suite) or warm")
    ("out", po::value<std::string>()->default_value("results/run"), "output directory: summary.json (\"status\": running until the run ends, then ok, interrupted (SIGINT/SIGTERM: the steps done), aborted or failed), steps.csv and requests.csv (written as the run goes), perf.json; one run at a time (a lock, released when the process ends)")
    ("max-num-seqs", po::value<int32_t>()->default_value(256), "scheduler limit on running requests")
    ("max-num-batched-tokens", po::value<int32_t>()->default_value(16384), "scheduler token budget per step")
    ("max-model-len", po::value<int32_t>()->default_value(16384), "prompt + output limit (a longer trace row is a bad row; generated requests are cut); not given, a trace's longest request raises it (announced)")
    ("num-kv-blocks", po::value<int32_t>()->default_value(0), "KV pool size in 64-token blocks incl. the null block (0 = room for max-num-seqs full-length requests)")
    ("kv-gb", po::value<double>(), "KV pool size in GB (10^9 bytes) per GPU instead of --num-kv-blocks: as many blocks as hold that many bytes at the model's 4,132 B per token (docs/models.md), at most the room for max-num-seqs full-length requests; the run says the pool it makes")
    ("bt-stride-pad", po::value<int32_t>()->default_value(0), "block-table row stride minus width")
    ("cuda-graphs", po::bool_switch(), "pad decode-only steps to CUDA-graph capture sizes (default)")
    ("no-cuda-graphs", po::bool_switch(), "never pad")
    ("acceptance-preset", po::value<std::string>(), "default or repeated-prompt (default: the workload's)")
    ("acceptance-curve", po::value<std::string>(), "conditional acceptance per draft position, p1,...,pK")
    ("confidence-concentration", po::value<double>(), "kappa of the drafter confidences' Beta distribution (default 2; docs/models.md)")
    ("calibration", po::value<std::string>(), "time-model calibration JSON (default: workloads/calibration_h200.json when present)")
    ("step-log", po::value<std::string>(), "write every step's arrays to this text file (small runs)")
    ("dump-workload", po::value<std::string>(), "also write the workload as built (generated or parsed, re-timed, truncated) to this JSONL file")
    ("dump-steps", po::value<std::string>(), "write every step's device view, host view, sizes and reference outputs to this folder as .npy files plus index.json (workloads/STEP_DUMP.md; replay with scripts/replay_steps.py)")
    ("dump-av", po::value<std::string>(), "write every adaptive verification step's inputs and outputs (budget, host split, allocation, qsl) to this JSONL file, for scripts/oracle/check_av.py")
    ("dump-av-steps", po::value<int64_t>()->default_value(0), "--dump-av covers the run's first N steps (0: all)")
    ("dump-steps-limit", po::value<int64_t>()->default_value(kDefaultDumpStepsLimit), "--dump-steps writes at most this many steps (the first ones)")
    ("steps-csv-stride", po::value<int64_t>()->default_value(1), "write every n-th step to steps.csv")
    ("check-kv", po::bool_switch(), "check KV block accounting after every step (slow)")
    ("progress", po::value<std::string>()->default_value("auto"), "stderr: requests finished, steps and steps/s with ETA; auto (a bar on a terminal, a line every 10 s otherwise), bar, lines, none")
    ("jobs", po::value<int32_t>()->default_value(0), "processes of the metadata check: the implementations split into that many groups, each checked every step by a process of its own, in step with the run (0: two where a core is idle, else one); results are identical for any value (docs/performance.md)")
    ("what-if", po::value<std::string>(), "a labelled what-if no vLLM release runs: record-av-graphs (adaptive verification steps' metadata builds recorded and replayed under vLLM's recorded-graph key from its capture batch, as 0.33.0+ records uniform decode) or record-av-graphs-at-first-step (recorded from the first step of each key); reports which outputs and host values the replays freeze wrong, in summary.json's what_if_record_av_graphs")
    ("what-if-57207", po::bool_switch(), "a labelled what-if: the released vLLM states (vllm-0.31, vllm-0.34, ...) also build #57207's FP8 prefill segmentation, which no release up to 0.34.0 has (its host plan, copies and fills: 10 more launches per prefill step); the seed's Before and the fused suite build it always")
    ("no-dedup", po::bool_switch(), "emulate and compare every builder of every implementation itself, not once per step for the implementations that run it on the same inputs (for auditing; results are identical)")
    ("check-invariants", po::bool_switch(), "independent invariant check of every step: budgets, graph padding, KV partition, each request finished once (sim/observe/invariants.h; O(KV pool) per step)");
  // clang-format on
  return d;
}

std::string ResolveAgainst(const std::string& path, const std::string& config_file) {
  if (path.empty() || fs::path(path).is_absolute() || config_file.empty()) return path;
  return (fs::path(config_file).parent_path() / path).lexically_normal().string();
}

// A pair of switches --NAME (the default) and --no-NAME, as given on the command line or in a
// --config file: `NAME = false` there means --no-NAME and `no-NAME = false` means --NAME (a
// bool_switch set to false would read as "not given", and leave NAME on). Both given with the
// same meaning is fine; with opposite ones, refused.
absl::StatusOr<bool> PairedSwitch(const po::variables_map& vm, const std::string& name) {
  const std::string negated = "no-" + name;
  const bool on_given = !vm[name].defaulted(), off_given = !vm[negated].defaulted();
  const bool on = vm[name].as<bool>(), off = vm[negated].as<bool>();
  if (on_given && off_given && on == off)
    return absl::InvalidArgumentError(absl::StrCat("--", name, " and --", negated, " contradict each other"));
  if (on_given) return on;
  if (off_given) return !off;
  return true;
}

}  // namespace

bool IsRunSwitch(const std::string& name) {
  static const po::options_description* desc = new po::options_description(RunOptions());
  const po::option_description* option = desc->find_nothrow(name, false);
  return option != nullptr && option->semantic()->max_tokens() == 0;
}

absl::StatusOr<RunConfig> ParseRunArgs(int argc, char** argv, std::string* help) {
  RunConfig c;
  for (int i = 0; i < argc; ++i) c.argv.emplace_back(argv[i]);
  const po::options_description desc = RunOptions();
  po::variables_map vm;
  bool cli_trace = false, cli_calibration = false;
  // UTF-8 only (options end up in summary.json), nothing that hangs Boost (sim/options/option_text.h).
  DS_RETURN_IF_ERROR(CheckOptionArgs(argc, argv));
  try {
    const po::parsed_options parsed = po::command_line_parser(argc, argv).options(desc).style(kCommandLineStyle).run();
    DS_RETURN_IF_ERROR(RefusePositional(parsed, "run"));
    po::store(parsed, vm);
    cli_trace = vm.count("trace") > 0;
    cli_calibration = vm.count("calibration") > 0;
    if (vm.count("config")) {
      c.config_file = vm["config"].as<std::string>();
      DS_ASSIGN_OR_RETURN(const std::string text, ReadConfigFile(c.config_file));
      DS_RETURN_IF_ERROR(CheckOptionFile(text, c.config_file));
      std::istringstream in(text);
      try {
        po::store(po::parse_config_file(in, desc), vm);
      } catch (const po::error& e) {
        return ConfigFileError(desc, e, c.config_file, text, "run");
      }
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return CommandLineError(desc, e, "run");
  }
  if (vm.count("help")) {
    std::ostringstream text;
    text << desc;
    *help = text.str();
    return c;
  }
  // Read as text: boost's unsigned conversion would wrap "-1" to 2^64 - 1.
  if (const std::string seed = vm["seed"].as<std::string>(); !absl::SimpleAtoi(seed, &c.seed))
    return absl::InvalidArgumentError(
        absl::StrCat("--seed: expected an integer in [0, 18446744073709551615], got '", Abbreviate(seed), "'"));
  if (vm.count("trace"))
    c.trace_path = cli_trace ? vm["trace"].as<std::string>()
                             : ResolveAgainst(vm["trace"].as<std::string>(), c.config_file);
  if (vm.count("workload")) c.workload = vm["workload"].as<std::string>();
  auto format = ParseTraceFormat(vm["trace-format"].as<std::string>());
  if (!format.ok()) return format.status();
  c.trace_format = *format;
  c.skip_bad_rows = vm["skip-bad-rows"].as<bool>();
  DS_ASSIGN_OR_RETURN(c.over_length, ParseOverLength(vm["over-length"].as<std::string>()));
  // -0 is 0: a negative zero would scale every arrival to -0 s and be written as -0.0.
  c.time_scale = vm["time-scale"].as<double>() + 0.0;
  c.concurrency = vm["concurrency"].as<int32_t>();
  // vLLM's names are aliases: either spelling, not both.
  if (vm.count("max-concurrency")) {
    if (!vm["concurrency"].defaulted())
      return absl::InvalidArgumentError("--concurrency and --max-concurrency are the same option: give one");
    c.concurrency = vm["max-concurrency"].as<int32_t>();
  }
  if (vm.count("request-rate")) {
    // Parsed, never compared as text: inf, Inf, INF, infinity and 1e999 are one value, and
    // every infinite rate means the same (RunConfig::request_rate_given).
    const std::string rate = vm["request-rate"].as<std::string>();
    if (!absl::SimpleAtod(rate, &c.request_rate))
      return absl::InvalidArgumentError(
          absl::StrCat("--request-rate: expected a number or inf, got '", Abbreviate(rate), "'"));
    c.request_rate_given = !std::isinf(c.request_rate);
  }
  c.burstiness = vm["burstiness"].as<double>();
  c.num_requests = vm["num-requests"].as<int64_t>();
  if (vm.count("num-prompts")) {
    if (!vm["num-requests"].defaulted())
      return absl::InvalidArgumentError("--num-requests and --num-prompts are the same option: give one");
    c.num_requests = vm["num-prompts"].as<int64_t>();
  }
  DS_ASSIGN_OR_RETURN(c.result_spec.percentile_metrics,
                      ParsePercentileMetrics(vm["percentile-metrics"].as<std::string>()));
  DS_ASSIGN_OR_RETURN(c.result_spec.metric_percentiles,
                      ParseMetricPercentiles(vm["metric-percentiles"].as<std::string>()));
  if (vm.count("goodput")) {
    DS_ASSIGN_OR_RETURN(c.result_spec.goodput_ms,
                        ParseGoodput(vm["goodput"].as<std::vector<std::string>>()));
  }
  c.save_result = vm["save-result"].as<bool>();
  if (vm.count("result-dir")) c.result_dir = vm["result-dir"].as<std::string>();
  if (vm.count("result-filename")) c.result_filename = vm["result-filename"].as<std::string>();
  auto mode = ParseSpecMode(vm["mode"].as<std::string>());
  if (!mode.ok()) return mode.status();
  c.scheduler.mode = *mode;
  auto adaptive_mode = ParseAdaptiveMode(vm["adaptive-mode"].as<std::string>());
  if (!adaptive_mode.ok()) return adaptive_mode.status();
  c.scheduler.adaptive_mode = *adaptive_mode;
  DS_ASSIGN_OR_RETURN(c.scheduler.av_release, ParseAvRelease(vm["av-release"].as<std::string>()));
  c.scheduler.vocab_size = vm["vocab-size"].as<int32_t>();
  if (c.scheduler.vocab_size < 1)
    return absl::InvalidArgumentError(absl::StrCat("--vocab-size: expected >= 1, got ", c.scheduler.vocab_size));
  c.scheduler.spec_k = vm["spec-k"].as<int32_t>();
  {
    absl::StatusOr<ModelKind> model = ParseModel(vm["model"].as<std::string>());
    if (!model.ok()) return absl::InvalidArgumentError(absl::StrCat("--model: ", model.status().message()));
    c.model = *model;
  }
  c.scheduler.block_size = ModelConstsFor(c.model).mla_block_size;
  c.impl_list = vm["impl"].as<std::string>();
  auto impls = ParseImplListForModel(c.impl_list, c.model);
  if (!impls.ok()) return absl::InvalidArgumentError(absl::StrCat("--impl: ", impls.status().message()));
  c.impls = *impls;
  if (vm.count("time-impl")) {
    auto time_impl = ParseImplKey(vm["time-impl"].as<std::string>());
    if (!time_impl.ok()) return absl::InvalidArgumentError(absl::StrCat("--time-impl: ", time_impl.status().message()));
    c.time_impl = *time_impl;
  } else {
    c.time_impl = DefaultTimeImpl(c.model);
  }
  DS_ASSIGN_OR_RETURN(c.check, PairedSwitch(vm, "check"));
  c.executor = vm["executor"].as<std::string>();
  const std::string gpu_l2 = vm["gpu-l2"].as<std::string>();
  if (gpu_l2 != "cold" && gpu_l2 != "warm")
    return absl::InvalidArgumentError(absl::StrCat("--gpu-l2: expected cold or warm, got '", Abbreviate(gpu_l2), "'"));
  c.gpu_cold_l2 = gpu_l2 == "cold";
  DS_ASSIGN_OR_RETURN(c.scheduler.cuda_graphs, PairedSwitch(vm, "cuda-graphs"));
  c.out_dir = vm["out"].as<std::string>();
  c.scheduler.max_num_seqs = vm["max-num-seqs"].as<int32_t>();
  c.scheduler.max_num_batched_tokens = vm["max-num-batched-tokens"].as<int32_t>();
  c.scheduler.max_model_len = vm["max-model-len"].as<int32_t>();
  c.max_model_len_given = !vm["max-model-len"].defaulted();
  c.scheduler.num_kv_blocks = vm["num-kv-blocks"].as<int32_t>();
  if (vm.count("kv-gb")) {
    if (!vm["num-kv-blocks"].defaulted())
      return absl::InvalidArgumentError(
          "give the KV pool as --kv-gb or as --num-kv-blocks, not both (a GB size is turned into blocks)");
    c.kv_gb = vm["kv-gb"].as<double>();
    if (!(c.kv_gb > 0) || !std::isfinite(c.kv_gb))
      return absl::InvalidArgumentError(absl::StrFormat("--kv-gb: expected a size in GB above 0, got %g", c.kv_gb));
  }
  c.scheduler.bt_stride_pad = vm["bt-stride-pad"].as<int32_t>();
  if (vm.count("acceptance-preset")) c.acceptance_preset = vm["acceptance-preset"].as<std::string>();
  if (vm.count("acceptance-curve")) c.acceptance_curve = vm["acceptance-curve"].as<std::string>();
  if (vm.count("confidence-concentration")) {
    c.confidence_concentration = vm["confidence-concentration"].as<double>();
    if (!(c.confidence_concentration > 0.0) || !std::isfinite(c.confidence_concentration))
      return absl::InvalidArgumentError(absl::StrCat("--confidence-concentration: expected a number > 0, got ",
                                                     c.confidence_concentration));
  }
  if (vm.count("calibration"))
    c.calibration = cli_calibration ? vm["calibration"].as<std::string>()
                                    : ResolveAgainst(vm["calibration"].as<std::string>(), c.config_file);
  if (vm.count("step-log")) c.step_log = vm["step-log"].as<std::string>();
  if (vm.count("dump-workload")) c.dump_workload = vm["dump-workload"].as<std::string>();
  if (vm.count("dump-steps")) c.dump_steps = vm["dump-steps"].as<std::string>();
  c.dump_steps_limit = vm["dump-steps-limit"].as<int64_t>();
  if (vm.count("dump-av")) c.dump_av = vm["dump-av"].as<std::string>();
  c.dump_av_steps = vm["dump-av-steps"].as<int64_t>();
  c.steps_csv_stride = vm["steps-csv-stride"].as<int64_t>();
  c.check_kv_each_step = vm["check-kv"].as<bool>();
  c.check_invariants = vm["check-invariants"].as<bool>();
  DS_ASSIGN_OR_RETURN(c.progress, ParseProgressStyle(vm["progress"].as<std::string>()));
  c.jobs = vm["jobs"].as<int32_t>();
  c.dedup = !vm["no-dedup"].as<bool>();
  c.what_if_57207 = vm["what-if-57207"].as<bool>();
  if (vm.count("what-if")) {
    c.what_if = vm["what-if"].as<std::string>();
    if (c.what_if != "record-av-graphs" && c.what_if != "record-av-graphs-at-first-step")
      return absl::InvalidArgumentError(absl::StrCat(
          "--what-if: expected record-av-graphs or record-av-graphs-at-first-step, got '", c.what_if, "'"));
  }
  if (c.jobs < 0 || c.jobs > 1024)
    return absl::InvalidArgumentError(
        absl::StrCat("--jobs: expected 0 (two where a core is idle, else one) to 1024, got ", c.jobs));
  return c;
}

}  // namespace dspark::sim
