#include "sim/cli/cmd_bench.cuh"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/common/status_macros.h"
#include "sim/model/acceptance.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/studies/run.h"
#include "sim/studies/config.h"
#include "sim/exec/cuda_device.h"
#include "sim/exec/gpu_executor.cuh"
#include "sim/exec/gpu_timing.cuh"
#include "sim/studies/metadata_bench.cuh"
#include "sim/results/result_files.h"
#include "sim/results/source_tree.h"
#include "sim/model/time_model.h"
#include "sim/studies/tpot_loop.cuh"
#include "sim/studies/workload.h"

namespace dspark::sim {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

po::options_description BenchOptions() {
  po::options_description d(
      "dspark-sim bench: the seed's metadata table (eight cases at batch 16 x every implementation) and its\n"
      "batch-1 TPOT table (512 in / 128 out, modes none / dspark / adaptive) on the local GPU. Needs a CUDA GPU.\n\n"
      "Options");
  // clang-format off
  d.add_options()
    ("help,h", "print this help")
    ("out", po::value<std::string>()->default_value("results/bench"), "output directory (bench.json, bench.md, bench_metadata.csv, bench_tpot.csv)")
    ("cold-l2", po::bool_switch(), "flush L2 (write max(2 x L2, 256 MiB)) before every sample, outside the timed region (default)")
    ("warm-l2", po::bool_switch(), "no flush")
    ("reps", po::value<int>()->default_value(1000), "the most timed samples per metadata row (with --max-noise 0 --max-time-s 0: exactly this many)")
    ("min-samples", po::value<int>()->default_value(100), "timed samples per row before the noise may stop it (>= 100 for the method)")
    ("max-noise", po::value<double>()->default_value(0.5), "[%] stop a row once the relative standard error of its mean is at most this (0: off)")
    ("max-time-s", po::value<double>()->default_value(1.0), "[s] stop a row after this much wall time of timed samples, even below --min-samples (0: no limit)")
    ("warmup", po::value<int>()->default_value(10), "untimed samples before each row")
    ("impl", po::value<std::string>()->default_value("all"), absl::StrCat("implementations: a comma list, or all, of\n", ImplHelpText()).c_str())
    ("model", po::value<std::string>()->default_value("v4.1"), "model layout of the metadata table: v4.1 (DeepSeek-V4.1) or v4 (DeepSeek-V4: vllm-0.24, vllm-0.27, vllm-0.29 as released; needs --no-tpot, the TPOT loop runs DeepSeek-V4.1); --impl all means the model's states")
    ("cases", po::value<std::string>()->default_value("all"), "metadata cases: comma list of prefill, chunked_prefill, mixed, decode, dspark_verify, dspark_adaptive_verify, dspark_draft, dspark_adaptive_draft, or all")
    ("batch", po::value<int32_t>()->default_value(16), "requests per metadata case")
    ("seed", po::value<uint64_t>()->default_value(1), "seed of the case batches and of the TPOT runs")
    ("no-metadata", po::bool_switch(), "skip the metadata table")
    ("no-tpot", po::bool_switch(), "skip the TPOT table")
    ("tpot-samples", po::value<int>()->default_value(4), "single-request GPU TPOT-loop runs per (mode, implementation), interleaved across implementations (the check of the table)")
    ("tpot-model-samples", po::value<int>()->default_value(1000), "single-request schedules per (mode, implementation) of the batch-1 table's composition (CPU engine clock, this run's measured metadata µs)")
    ("tpot-modes", po::value<std::string>()->default_value("none,dspark,adaptive"), "comma list of none, dspark, adaptive")
    ("host-standin", po::value<std::string>()->default_value("model"), "TPOT loop host time: model (spin for the time model's scheduling and metadata host time, as a Python engine spends it) or off (only this program's real host work)")
    ("calibration", po::value<std::string>(), "time model of the TPOT loop (forward stand-in and host terms); default workloads/calibration_h200.json when present, else the built-in defaults")
    ("full-run", po::bool_switch(), "also run a speed-8k workload with adaptive verification through the GPU executor (every step checked) and report mismatches per implementation")
    ("full-run-requests", po::value<int64_t>()->default_value(16), "requests of the --full-run workload (8192 in / 1024 out each)")
    ("full-run-concurrency", po::value<int32_t>()->default_value(16), "client concurrency of the --full-run workload")
    ("device", po::value<int>()->default_value(0), "CUDA device ordinal");
  // clang-format on
  return d;
}

}  // namespace

absl::Status BenchConfig::Validate() const {
  if (reps < 10) return absl::InvalidArgumentError(absl::StrFormat("--reps=%d: need at least 10", reps));
  DS_RETURN_IF_ERROR(Stopping().Validate());
  if (warmup < 0) return absl::InvalidArgumentError(absl::StrFormat("--warmup=%d: need >= 0", warmup));
  if (impls.empty()) return absl::InvalidArgumentError("--impl: expected at least one implementation");
  if (cases.empty()) return absl::InvalidArgumentError("--cases: expected at least one case");
  if (batch < 1 || batch > 1024) return absl::InvalidArgumentError(absl::StrFormat("--batch=%d: need 1..1024", batch));
  if (tpot_samples < 1) return absl::InvalidArgumentError(absl::StrFormat("--tpot-samples=%d: need >= 1", tpot_samples));
  if (tpot_model_samples < 1 || tpot_model_samples > 100000)
    return absl::InvalidArgumentError(absl::StrFormat("--tpot-model-samples=%d: need 1..100000", tpot_model_samples));
  if (tpot && tpot_modes.empty()) return absl::InvalidArgumentError("--tpot-modes: expected at least one mode");
  if (full_run_requests < 1)
    return absl::InvalidArgumentError(absl::StrFormat("--full-run-requests=%d: need >= 1", full_run_requests));
  if (full_run_concurrency < 0 || full_run_concurrency > 256)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--full-run-concurrency=%d: need 0..256 (adaptive verification allocates in one block)", full_run_concurrency));
  if (out_dir.empty()) return absl::InvalidArgumentError("--out: expected a directory");
  if (model != ModelKind::kV41 && (tpot || full_run))
    return absl::InvalidArgumentError(absl::StrCat(
        "--model ", std::string(ModelName(model)), ": only the metadata table follows the model (the TPOT loop and --full-run run "
        "DeepSeek-V4.1); add --no-tpot and leave out --full-run"));
  if (!metadata && !tpot && !full_run)
    return absl::InvalidArgumentError("--no-metadata and --no-tpot without --full-run leave nothing to do");
  return absl::OkStatus();
}

timing::StoppingCriterion BenchConfig::Stopping() const {
  timing::StoppingCriterion c;
  c.min_samples = min_samples;
  c.max_samples = reps;
  c.max_noise = max_noise_pct / 100.0;
  c.max_time_s = max_time_s;
  return c;
}

absl::StatusOr<BenchConfig> ParseBenchArgs(int argc, char** argv, std::string* help) {
  BenchConfig c;
  for (int i = 0; i < argc; ++i) c.argv.emplace_back(argv[i]);
  const po::options_description desc = BenchOptions();
  DS_ASSIGN_OR_RETURN(const po::variables_map vm, cli::ParseCommandLine(desc, argc, argv, "bench", help));
  if (!help->empty()) return c;
  c.out_dir = vm["out"].as<std::string>();
  if (vm["cold-l2"].as<bool>() && vm["warm-l2"].as<bool>())
    return absl::InvalidArgumentError("--cold-l2 and --warm-l2 contradict each other");
  c.cold_l2 = !vm["warm-l2"].as<bool>();
  c.reps = vm["reps"].as<int>();
  c.min_samples = vm["min-samples"].as<int>();
  c.max_noise_pct = vm["max-noise"].as<double>();
  c.max_time_s = vm["max-time-s"].as<double>();
  c.warmup = vm["warmup"].as<int>();
  auto model = ParseModel(vm["model"].as<std::string>());
  if (!model.ok()) return absl::InvalidArgumentError(absl::StrCat("--model: ", model.status().message()));
  c.model = *model;
  auto impls = ParseImplListForModel(vm["impl"].as<std::string>(), c.model);
  if (!impls.ok()) return absl::InvalidArgumentError(absl::StrCat("--impl: ", impls.status().message()));
  c.impls = *impls;
  DS_ASSIGN_OR_RETURN(c.cases, ParseBenchCases(vm["cases"].as<std::string>()));
  c.batch = vm["batch"].as<int32_t>();
  c.seed = vm["seed"].as<uint64_t>();
  c.metadata = !vm["no-metadata"].as<bool>();
  c.tpot = !vm["no-tpot"].as<bool>();
  c.tpot_samples = vm["tpot-samples"].as<int>();
  c.tpot_model_samples = vm["tpot-model-samples"].as<int>();
  c.tpot_modes.clear();
  for (absl::string_view m : absl::StrSplit(vm["tpot-modes"].as<std::string>(), ',', absl::SkipEmpty())) {
    auto mode = ParseSpecMode(absl::StripAsciiWhitespace(m));
    if (!mode.ok()) return absl::InvalidArgumentError(absl::StrCat("--tpot-modes: ", mode.status().message()));
    if (std::find(c.tpot_modes.begin(), c.tpot_modes.end(), *mode) == c.tpot_modes.end()) c.tpot_modes.push_back(*mode);
  }
  const std::string host = vm["host-standin"].as<std::string>();
  if (host != "model" && host != "off")
    return absl::InvalidArgumentError(absl::StrCat("--host-standin: expected model or off, got '", host, "'"));
  c.model_host = host == "model";
  if (vm.count("calibration")) c.calibration = vm["calibration"].as<std::string>();
  c.full_run = vm["full-run"].as<bool>();
  c.full_run_requests = vm["full-run-requests"].as<int64_t>();
  c.full_run_concurrency = vm["full-run-concurrency"].as<int32_t>();
  c.device = vm["device"].as<int>();
  return c;
}


namespace {

int BenchMain(BenchConfig& cfg) {
  if (const absl::Status s = RequireCudaDeviceToMeasure("bench"); !s.ok()) return cli::CommandError("bench", s, 2);
  auto outcome = RunBench(cfg);
  if (!outcome.ok()) return cli::CommandError("bench", outcome.status(), absl::IsFailedPrecondition(outcome.status()) ? 2 : 1);
  std::fputs(outcome->markdown.c_str(), stdout);
  std::fflush(stdout);
  for (const std::string& w : outcome->warnings) std::fprintf(stderr, "dspark-sim bench: warning: %s\n", w.c_str());
  if (!outcome->bugs.empty()) {
    for (const std::string& b : outcome->bugs) std::fprintf(stderr, "dspark-sim bench: BUG: %s\n", b.c_str());
    return 3;
  }
  return 0;
}

int BenchCommand(int argc, char** argv) {
  return cli::RunParsedCommand<BenchConfig>("bench", argc, argv, ParseBenchArgs, BenchMain);
}

const cli::RegisterCommand kRegisterBench(
    "bench", "GPU: the seed's metadata table (8 cases x impls) and batch-1 TPOT table; --full-run for speed-8k",
    BenchCommand);

}  // namespace

}  // namespace dspark::sim