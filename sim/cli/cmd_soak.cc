// `dspark-sim soak`: the long determinism / invariant / memory run of sim/studies/soak.h; writes
// OUT/soak.json and exits 1 when a check failed.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

#include <boost/program_options.hpp>

#include "absl/strings/str_cat.h"
#include "kernels/common/status_macros.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/results/result_files.h"
#include "sim/studies/soak.h"

namespace dspark::sim {
namespace {

// [MiB] the largest --rss-limit-mib: 2^40 MiB (1 EiB) is far above any machine and far below
// the int64 KiB it is turned into.
constexpr double kMaxRssLimitMib = 1099511627776.0;

namespace po = boost::program_options;

po::options_description SoakOptionsDescription() {
  po::options_description d(
      "dspark-sim soak: run the simulator twice with one seed for at least --steps steps each; check the\n"
      "invariants every step, the two runs' digests, and that RSS stays flat after warm-up (10% of run 1)");
  // clang-format off
  d.add_options()
    ("help,h", "print this help")
    ("steps", po::value<int64_t>()->default_value(1000000), "simulated steps per run (at least; a run ends with its last whole batch)")
    ("seed", po::value<uint64_t>()->default_value(0), "seed of both runs")
    ("workload", po::value<std::string>()->default_value("chat"), "preset of every batch: speed-8k, batch1-512, chat")
    ("batch-requests", po::value<int64_t>()->default_value(4096), "requests per batch (a fresh engine each; bounds the memory)")
    ("concurrency", po::value<int32_t>()->default_value(64), "client limit on requests in flight (closed loop)")
    ("mode", po::value<std::string>()->default_value("adaptive"), "none, dspark or adaptive")
    ("spec-k", po::value<int32_t>()->default_value(5), "DSpark speculative length K")
    ("max-num-seqs", po::value<int32_t>()->default_value(256), "scheduler limit on running requests")
    ("max-num-batched-tokens", po::value<int32_t>()->default_value(16384), "scheduler token budget per step")
    ("max-model-len", po::value<int32_t>()->default_value(16384), "prompt + output limit")
    ("num-kv-blocks", po::value<int32_t>()->default_value(SoakSchedulerDefaults().num_kv_blocks), "KV pool in 64-token blocks incl. the null block (0 = auto); the default makes preemptions happen (about 1% of steps) and keeps the per-step KV check cheap")
    ("no-cuda-graphs", po::bool_switch(), "never pad to CUDA-graph capture sizes")
    ("rss-sample-every", po::value<int64_t>()->default_value(10000), "read VmRSS every n steps")
    ("rss-limit-mib", po::value<double>()->default_value(2.0), "fail when the RSS peak after warm-up exceeds the warm-up peak by more than this [MiB]")
    ("kv-check-every", po::value<int64_t>()->default_value(1), "KV partition check every n steps")
    ("rows-check-every", po::value<int64_t>()->default_value(64), "per-row check (builds the step's arrays) every n steps, 0 = never")
    ("calibration", po::value<std::string>(), "time-model calibration JSON (default: workloads/calibration_h200.json)")
    ("progress", po::value<std::string>()->default_value("auto"), "stderr: each run's steps, steps/s and ETA; auto (a bar on a terminal, a line every 10 s otherwise), bar, lines, none")
    ("out", po::value<std::string>()->default_value("results/soak"), "output directory (soak.json)");
  // clang-format on
  return d;
}

// The soak's options and where soak.json goes.
struct SoakCommandConfig {
  SoakOptions options;
  std::string out_dir;
  absl::Status Validate() const { return options.Validate(); }
};

absl::StatusOr<SoakCommandConfig> ParseSoakArgs(int argc, char** argv, std::string* help) {
  const po::options_description desc = SoakOptionsDescription();
  DS_ASSIGN_OR_RETURN(const po::variables_map vm, cli::ParseCommandLine(desc, argc, argv, "soak", help));
  SoakCommandConfig c;
  if (!help->empty()) return c;
  SoakOptions& o = c.options;
  for (int i = 0; i < argc; ++i) o.argv.emplace_back(argv[i]);
  o.steps = vm["steps"].as<int64_t>();
  o.seed = vm["seed"].as<uint64_t>();
  o.workload = vm["workload"].as<std::string>();
  o.batch_requests = vm["batch-requests"].as<int64_t>();
  o.concurrency = vm["concurrency"].as<int32_t>();
  DS_ASSIGN_OR_RETURN(o.scheduler.mode, ParseSpecMode(vm["mode"].as<std::string>()));
  o.scheduler.spec_k = vm["spec-k"].as<int32_t>();
  o.scheduler.max_num_seqs = vm["max-num-seqs"].as<int32_t>();
  o.scheduler.max_num_batched_tokens = vm["max-num-batched-tokens"].as<int32_t>();
  o.scheduler.max_model_len = vm["max-model-len"].as<int32_t>();
  o.scheduler.num_kv_blocks = vm["num-kv-blocks"].as<int32_t>();
  o.scheduler.cuda_graphs = !vm["no-cuda-graphs"].as<bool>();
  o.rss_sample_every = vm["rss-sample-every"].as<int64_t>();
  // Checked before the cast: NaN, inf or a value beyond int64 KiB has no integer to become.
  const double rss_limit_mib = vm["rss-limit-mib"].as<double>();
  if (!(rss_limit_mib >= 0.0 && rss_limit_mib <= kMaxRssLimitMib))
    return absl::InvalidArgumentError(
        absl::StrCat("--rss-limit-mib: expected a number of MiB in [0, 2^40], got ", rss_limit_mib));
  o.rss_limit_kib = static_cast<int64_t>(rss_limit_mib * 1024.0);
  o.kv_check_every = vm["kv-check-every"].as<int64_t>();
  o.rows_check_every = vm["rows-check-every"].as<int64_t>();
  if (vm.count("calibration")) o.calibration = vm["calibration"].as<std::string>();
  DS_ASSIGN_OR_RETURN(o.progress, ParseProgressStyle(vm["progress"].as<std::string>()));
  c.out_dir = vm["out"].as<std::string>();
  return c;
}

int SoakMain(SoakCommandConfig& c) {
  const SoakOptions& o = c.options;
  const std::string& out_dir = c.out_dir;
  auto result = RunSoak(o);
  if (!result.ok()) return cli::CommandError("soak", result.status(), 1);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "dspark-sim soak: --out: cannot create '%s': %s\n", out_dir.c_str(), ec.message().c_str());
    return 1;
  }
  const std::string path = (std::filesystem::path(out_dir) / "soak.json").string();
  if (absl::Status s = WriteFileAtomically(path, result->ToJson(o).dump(2) + "\n"); !s.ok())
    return cli::CommandError("soak", s, 1);

  const SoakResult& r = *result;
  std::printf("dspark-sim soak: %s, mode %s, K %d, concurrency %d, seed %llu\n", o.workload.c_str(),
              std::string(SpecModeName(o.scheduler.mode)).c_str(), o.scheduler.spec_k, o.concurrency,
              static_cast<unsigned long long>(o.seed));
  for (int i = 0; i < 2; ++i) {
    const SoakRun& run = r.runs[i];
    std::printf("  run %d: %lld steps, %lld batches, %lld requests finished, %lld preemptions, %.1f s wall = %.0f steps/s, digest %016llx\n",
                i + 1, static_cast<long long>(run.steps), static_cast<long long>(run.batches),
                static_cast<long long>(run.requests_finished), static_cast<long long>(run.preemptions), run.wall_s,
                run.wall_s > 0 ? run.steps / run.wall_s : 0.0, static_cast<unsigned long long>(run.digest));
  }
  std::printf("  determinism: %s\n", r.identical ? "identical" : "DIFFERENT");
  std::printf("  invariants: %s (KV partition checked %lld + %lld steps, rows %lld + %lld)\n",
              r.runs[0].invariants_ok && r.runs[1].invariants_ok ? "ok" : "VIOLATED",
              static_cast<long long>(r.runs[0].kv_checks), static_cast<long long>(r.runs[1].kv_checks),
              static_cast<long long>(r.runs[0].row_checks), static_cast<long long>(r.runs[1].row_checks));
  std::printf("  RSS: %lld KiB at warm-up end (step %lld; warm-up peak %lld KiB), %lld KiB at end of run 1, %lld KiB at end; "
              "peak after warm-up %lld KiB, growth %lld KiB (limit %lld KiB): %s\n",
              static_cast<long long>(r.rss_at_warmup_kib), static_cast<long long>(r.warmup_step),
              static_cast<long long>(r.rss_warmup_peak_kib), static_cast<long long>(r.rss_end_run1_kib),
              static_cast<long long>(r.rss_end_kib), static_cast<long long>(r.rss_max_after_warmup_kib),
              static_cast<long long>(r.rss_growth_kib), static_cast<long long>(o.rss_limit_kib), r.rss_ok ? "ok" : "FAIL");
  for (const std::string& f : r.failures) std::printf("  FAILED: %s\n", f.c_str());
  std::printf("  wrote %s\n", path.c_str());
  return r.ok() ? 0 : 1;
}

int SoakCommand(int argc, char** argv) {
  return cli::RunParsedCommand<SoakCommandConfig>("soak", argc, argv, ParseSoakArgs, SoakMain);
}

const cli::RegisterCommand kRegisterSoak(
    "soak", "long run twice with one seed: invariants every step, identical digests, flat RSS", SoakCommand);

}  // namespace
}  // namespace dspark::sim
