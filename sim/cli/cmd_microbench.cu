// `dspark-sim microbench`: GPU time per call of every token-mapping and indexer-decode
// implementation, alone and as mapping+indexer pairs, on batch-16 decode and DSpark verify
// shapes, each beside the empty-kernel floor measured the same way in the same run
// (method: sim/exec/gpu_timing.cuh). Every row is also checked once against the CPU reference
// built from the device boundaries; a wrong fused or device-chain row makes the command fail.
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kernels/common/backend_gpu.cuh"
#include "kernels/common/byte_math.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/common/status_macros.h"
#include "kernels/indexer_impls.h"
#include "kernels/reference/indexer_decode.h"
#include "kernels/reference/token_map.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/token_map_impls.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/exec/cuda_device.h"
#include "sim/exec/gpu_timing.cuh"
#include "sim/results/result_files.h"
#include "sim/studies/gpu_result_meta.cuh"
#include "sim/cli/microbench_rows.cuh"

namespace dspark {
namespace {

namespace po = boost::program_options;
using namespace microbench_internal;

// The options and the cases they name.
struct MicrobenchPlan {
  std::vector<std::string> argv;  // for the JSON meta
  Config cfg;
  std::vector<BenchCase> cases;
};

absl::StatusOr<MicrobenchPlan> ParseMicrobenchArgs(int argc, char** argv, std::string* help) {
  MicrobenchPlan plan;
  Config& cfg = plan.cfg;
  po::options_description desc(
      "dspark-sim microbench: GPU time per call of the token-mapping and indexer-decode metadata\n"
      "implementations (median, p10, p90 over graph replays or eager calls), beside the\n"
      "empty-kernel floor measured the same way in the same run. Needs a CUDA GPU.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "reps", po::value<int>(&cfg.reps)->default_value(cfg.reps), "timed samples per row (>= 100 recommended)")(
      "warmup", po::value<int>(&cfg.warmup)->default_value(cfg.warmup), "untimed samples first")(
      "l2", po::value<std::string>(&cfg.l2)->default_value(cfg.l2),
      "cold: write max(2 x L2, 256 MiB) before every sample, outside the timed region; warm: no flush")(
      "cases", po::value<std::string>(&cfg.cases)->default_value(cfg.cases),
      "comma-separated: decode, verify, adaptive, r256")(
      "seq-len", po::value<int32_t>(&cfg.seq_len)->default_value(cfg.seq_len), "context tokens per request")(
      "bt-width", po::value<int32_t>(&cfg.bt_width)->default_value(cfg.bt_width), "used block-table columns")(
      "bt-stride", po::value<int32_t>(&cfg.bt_stride)->default_value(cfg.bt_stride), "block-table row stride")(
      "capacity", po::value<int32_t>(&cfg.capacity)->default_value(cfg.capacity),
      "persistent buffer length [tokens]; raised to next_pow2(N) for cases that need more")(
      "device", po::value<int>(&cfg.device)->default_value(cfg.device), "CUDA device ordinal")(
      "json", po::value<std::string>(&cfg.json_path), "also write the results as JSON to this path");
  DS_ASSIGN_OR_RETURN(const po::variables_map vm, cli::ParseCommandLine(desc, argc, argv, "microbench", help));
  if (!help->empty()) return plan;
  plan.argv.assign(argv, argv + argc);
  // The cases are made from a valid config only.
  DS_RETURN_IF_ERROR(cfg.Validate());
  for (const auto& name : absl::StrSplit(cfg.cases, ',', absl::SkipEmpty())) {
    DS_ASSIGN_OR_RETURN(BenchCase c, MakeCase(std::string(name), cfg));
    plan.cases.push_back(std::move(c));
  }
  return plan;
}

int MicrobenchMain(MicrobenchPlan& plan) {
  const Config& cfg = plan.cfg;
  const std::vector<BenchCase>& cases = plan.cases;
  if (const absl::Status s = sim::RequireCudaDeviceToMeasure("microbench"); !s.ok())
    return cli::CommandError("microbench", s, 2);
  int device_count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&device_count));
  if (cfg.device < 0 || cfg.device >= device_count) {
    std::fprintf(stderr, "dspark-sim microbench: --device=%d, but %d device(s) present\n", cfg.device, device_count);
    return 2;
  }
  CUDA_CHECK(cudaSetDevice(cfg.device));

  const timing::GpuMeta meta = timing::ReadGpuMeta(cfg.device);
  timing::TimingOptions opt;
  opt.reps = cfg.reps;
  opt.warmup = cfg.warmup;
  opt.l2 = cfg.l2 == "cold" ? timing::L2Mode::kCold : timing::L2Mode::kWarm;
  CudaStream stream;
  timing::L2Flusher flusher(cfg.device);
  // The pre-flight: every case's buffers must fit before the first one is allocated.
  for (const BenchCase& c : cases)
    if (const absl::Status s = CheckFreeDeviceMemory(
            PlanCase(c, cfg),
            absl::StrFormat("microbench case %s: capacity=%d, bt_stride=%d, %d requests", c.name, c.capacity,
                            cfg.bt_stride, c.num_reqs()),
            "lower --capacity or --bt-stride");
        !s.ok())
      return cli::CommandError("microbench", s, 2);
  if (cfg.reps < 100) std::fprintf(stderr, "note: --reps=%d is below the 100 samples the method asks for\n", cfg.reps);

  std::printf("# dspark-sim microbench\n\n%s (sm_%d%d, %d SMs, L2 %.0f MiB), driver %s, CUDA driver API %s, runtime %s, %s\n",
              meta.device_name.c_str(), meta.cc_major, meta.cc_minor, meta.sm_count, meta.l2_bytes / 1048576.0,
              meta.driver_version.c_str(), meta.cuda_driver_api.c_str(), meta.cuda_runtime.c_str(),
              meta.date_utc.c_str());
  std::printf("L2 %s (%s), %d samples per row after %d warm-up; graph rows: events around each replay; eager rows:\n"
              "events around the eager sequence, started after the flush completes (host work and launch\n"
              "latency included). Each row's floor is one empty kernel timed by the same method.\n",
              cfg.l2.c_str(),
              opt.l2 == timing::L2Mode::kCold
                  ? absl::StrFormat("%.0f MiB memset before every sample", flusher.bytes() / 1048576.0).c_str()
                  : "no flush",
              cfg.reps, cfg.warmup);

  nlohmann::ordered_json out;
  out["meta"] = sim::ResultMeta("dspark-sim microbench", "dspark-sim/microbench", 1, plan.argv, cfg.device);
  out["meta"].update(nlohmann::ordered_json{
                 {"l2_mode", cfg.l2},
                 {"flush_bytes", opt.l2 == timing::L2Mode::kCold ? flusher.bytes() : 0},
                 {"reps", cfg.reps},
                 {"warmup", cfg.warmup},
                 {"method",
                  "GPU time per call from CUDA events; graph rows: replay enqueued behind the flush; eager rows: "
                  "sequence started after the flush completed; floor: one empty kernel, same method"}});
  out["cases"] = nlohmann::ordered_json::array();

  const std::vector<RowSpec> rows = Rows();
  bool any_bug = false;
  for (const BenchCase& c : cases) {
    DeviceState st(c, cfg);
    const timing::Floors floors = timing::MeasureFloors(stream.get(), flusher, opt);
    std::vector<RowResult> results;
    for (const RowSpec& spec : rows) {
      auto r = MeasureRow(spec, st, stream.get(), flusher, opt);
      if (!r.ok()) {
        std::fprintf(stderr, "dspark-sim microbench: case %s, %s/%s (%s): %s\n", c.name.c_str(), spec.group.c_str(),
                     spec.impl.c_str(), MethodName(spec.method), std::string(r.status().message()).c_str());
        return 1;
      }
      results.push_back(*std::move(r));
    }
    double baseline = 0;
    std::string group;
    for (RowResult& r : results) {
      if (r.spec->group != group) {
        group = r.spec->group;
        baseline = r.stats.median_us;
      }
      r.floor_us = r.spec->method == Method::kGraph ? floors.graph.median_us : floors.eager.median_us;
      r.ratio_floor = r.floor_us > 0 ? r.stats.median_us / r.floor_us : 0;
      r.ratio_chain = baseline > 0 ? r.stats.median_us / baseline : 0;
      any_bug |= r.bug;
    }

    std::printf("\n## %s: %s; N=%d tokens, %d requests, capacity %d, block table %d of %d columns\n\n",
                c.name.c_str(), c.description.c_str(), c.num_tokens, c.num_reqs(), c.capacity, cfg.bt_width,
                cfg.bt_stride);
    std::printf("floor (one empty kernel): graph %.2f µs (p10 %.2f, p90 %.2f), eager %.2f µs (p10 %.2f, p90 %.2f)\n\n",
                floors.graph.median_us, floors.graph.p10_us, floors.graph.p90_us, floors.eager.median_us,
                floors.eager.p10_us, floors.eager.p90_us);
    std::printf("| group | impl | method | µs median | p10 | p90 | launches | floor µs | × floor | × chain | check |\n");
    std::printf("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    nlohmann::ordered_json jrows = nlohmann::ordered_json::array();
    for (const RowResult& r : results) {
      std::printf("| %s | %s | %s | %.2f | %.2f | %.2f | %lld | %.2f | %.2f | %.2f | %s |\n", r.spec->group.c_str(),
                  r.spec->impl.c_str(), MethodName(r.spec->method), r.stats.median_us, r.stats.p10_us, r.stats.p90_us,
                  static_cast<long long>(r.counters.Launches()), r.floor_us, r.ratio_floor, r.ratio_chain,
                  r.check.c_str());
      nlohmann::ordered_json j = {{"group", r.spec->group},
                                  {"impl", r.spec->impl},
                                  {"method", MethodName(r.spec->method)},
                                  {"reads_host_boundaries", r.spec->reads_host}};
      j.update(StatsJson(r.stats));
      j["launches"] = r.counters.Launches();
      j["kernels"] = r.counters.kernels;
      j["h2d_copies"] = r.counters.h2d_copies;
      j["d2d_copies"] = r.counters.d2d_copies;
      j["fills"] = r.counters.fills;
      j["host_syncs"] = r.counters.host_syncs;
      j["host_array_ops"] = r.counters.host_array_ops;
      j["graph_nodes"] = r.graph_nodes;
      j["floor_us"] = r.floor_us;
      j["ratio_vs_floor"] = r.ratio_floor;
      j["ratio_vs_chain"] = r.ratio_chain;
      j["check"] = r.check;
      jrows.push_back(std::move(j));
    }
    out["cases"].push_back({{"name", c.name},
                            {"description", c.description},
                            {"num_reqs", c.num_reqs()},
                            {"num_tokens", c.num_tokens},
                            {"capacity", c.capacity},
                            {"query_lens", c.lens},
                            {"host_query_lens", c.host_lens},
                            {"bt_width", cfg.bt_width},
                            {"bt_stride", cfg.bt_stride},
                            {"seq_len", cfg.seq_len},
                            {"floor", {{"graph", StatsJson(floors.graph)}, {"eager", StatsJson(floors.eager)}}},
                            {"rows", std::move(jrows)}});
  }
  std::printf("\n× chain: median over the group's first row (host mapping, chain indexer, host+chain pair).\n"
              "check: against the CPU reference from the device boundaries; stale-host and padding-residue are\n"
              "expected findings for host-reading / chain rows, BUG is not.\n");

  if (!cfg.json_path.empty()) {
    if (absl::Status s = sim::WriteFileAtomically(cfg.json_path, out.dump(2) + "\n"); !s.ok())
      return cli::CommandError("microbench", "--json: ", s, 1);
    std::printf("wrote %s\n", cfg.json_path.c_str());
  }
  if (any_bug) {
    std::fprintf(stderr, "dspark-sim microbench: a row that must be exact differs from the reference (BUG above)\n");
    return 3;
  }
  return 0;
}

int RunMicrobench(int argc, char** argv) {
  return cli::RunParsedCommand<MicrobenchPlan>("microbench", argc, argv, ParseMicrobenchArgs, MicrobenchMain);
}

const cli::RegisterCommand kRegister("microbench",
                                     "GPU µs per call of mapping / indexer metadata impls vs the empty-kernel floor",
                                     RunMicrobench);

}  // namespace
}  // namespace dspark
