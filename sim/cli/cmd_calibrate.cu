// `dspark-sim calibrate --out FILE`: measures the metadata cost of every implementation per seed
// case and padded size on the local GPU and writes the calibration JSON the CPU time model reads
// (schema: docs/models.md, "Calibration file"; loader: LoadCalibration in sim/model/time_model.cc).
//
// What is measured: GPU µs per builder suite by the graph method of sim/studies/metadata_bench.cuh
// (chain and cached through a graph captured for timing only, as the seed's "Before" column),
// L2 cold by default, for each case at each --batches size (the padded token count N follows).
// What is written:
//   metadata.<impl>.gpu_us.<case>       the median at the reference batch (16: the seed's table);
//   metadata.<impl>.gpu_us_per_token    the least-squares slope of the decode-like cases' medians
//                                       against max(0, N - 96) above their reference-batch value
//                                       (the model adds slope x (N - 96) above 96 tokens);
//   metadata.<impl>.serializes_host     whether the implementation reads host boundaries;
//   meta.{gpu, driver, date, ...}       provenance, and meta.measurements: every measured point.
// Host costs (host_us, host_us_per_req) are not written: this program's C++ host path is not a
// Python engine's, so the defaults stay in force for them.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/common/status_macros.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/exec/cuda_device.h"
#include "sim/studies/calibration_fit.cuh"
#include "sim/studies/gpu_result_meta.cuh"
#include "sim/studies/metadata_bench.cuh"
#include "sim/results/result_files.h"
#include "sim/model/time_model.h"

namespace dspark::sim {

namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

constexpr int32_t kReferenceBatch = kCalibrationReferenceBatch;

struct CalibrateConfig {
  std::vector<std::string> argv;
  std::string out;
  std::vector<Impl> impls = ImplsOfModel(ModelKind::kV41);
  std::vector<SeedCase> cases{std::begin(kAllSeedCases), std::end(kAllSeedCases)};
  std::vector<int32_t> batches = {1, 4, 16, 64, 256};
  int reps = 100;
  int warmup = 10;
  bool cold_l2 = true;
  uint64_t seed = 1;
  int device = 0;

  absl::Status Validate() const {
    if (out.empty()) return absl::InvalidArgumentError("--out FILE is required");
    if (reps < 10) return absl::InvalidArgumentError(absl::StrFormat("--reps=%d: need at least 10", reps));
    if (warmup < 0) return absl::InvalidArgumentError(absl::StrFormat("--warmup=%d: need >= 0", warmup));
    if (std::find(batches.begin(), batches.end(), kReferenceBatch) == batches.end())
      return absl::InvalidArgumentError(
          absl::StrFormat("--batches must include the reference batch %d (the time model's per-case value)",
                          kReferenceBatch));
    for (int32_t b : batches)
      if (b < 1 || b > 1024) return absl::InvalidArgumentError(absl::StrFormat("--batches: %d is not in 1..1024", b));
    return absl::OkStatus();
  }
};

absl::StatusOr<CalibrateConfig> Parse(int argc, char** argv, std::string* help) {
  CalibrateConfig c;
  for (int i = 0; i < argc; ++i) c.argv.emplace_back(argv[i]);
  po::options_description d(
      "dspark-sim calibrate: measure metadata GPU cost per (implementation, case, padded size) on this GPU and\n"
      "write the calibration JSON that `dspark-sim run` (CPU mode) reads with --calibration FILE. Needs a CUDA GPU.\n\n"
      "Options");
  // clang-format off
  d.add_options()
    ("help,h", "print this help")
    ("out", po::value<std::string>(), "calibration file to write (e.g. workloads/calibration_h200.json)")
    ("impl", po::value<std::string>()->default_value("all"), "comma list of implementations, or all")
    ("cases", po::value<std::string>()->default_value("all"), "comma list of cases, or all")
    ("batches", po::value<std::string>()->default_value("1,4,16,64,256"), "requests per case (must include 16, the reference)")
    ("reps", po::value<int>()->default_value(100), "timed graph replays per point")
    ("warmup", po::value<int>()->default_value(10), "untimed replays per point")
    ("cold-l2", po::bool_switch(), "flush L2 before every sample (default)")
    ("warm-l2", po::bool_switch(), "no flush")
    ("seed", po::value<uint64_t>()->default_value(1), "seed of the case batches")
    ("device", po::value<int>()->default_value(0), "CUDA device ordinal");
  // clang-format on
  DS_ASSIGN_OR_RETURN(const po::variables_map vm, cli::ParseCommandLine(d, argc, argv, "calibrate", help));
  if (!help->empty()) return c;
  if (vm.count("out")) c.out = vm["out"].as<std::string>();
  auto impls = ParseImplKeyList(vm["impl"].as<std::string>());
  if (!impls.ok()) return absl::InvalidArgumentError(absl::StrCat("--impl: ", impls.status().message()));
  c.impls = *impls;
  DS_ASSIGN_OR_RETURN(c.cases, ParseBenchCases(vm["cases"].as<std::string>()));
  c.batches.clear();
  for (absl::string_view piece : absl::StrSplit(vm["batches"].as<std::string>(), ',', absl::SkipEmpty())) {
    int32_t b = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(piece), &b))
      return absl::InvalidArgumentError(absl::StrCat("--batches: '", piece, "' is not an integer"));
    if (std::find(c.batches.begin(), c.batches.end(), b) == c.batches.end()) c.batches.push_back(b);
  }
  std::sort(c.batches.begin(), c.batches.end());
  c.reps = vm["reps"].as<int>();
  c.warmup = vm["warmup"].as<int>();
  if (vm["cold-l2"].as<bool>() && vm["warm-l2"].as<bool>())
    return absl::InvalidArgumentError("--cold-l2 and --warm-l2 contradict each other");
  c.cold_l2 = !vm["warm-l2"].as<bool>();
  c.seed = vm["seed"].as<uint64_t>();
  c.device = vm["device"].as<int>();
  return c;
}

absl::Status Calibrate(const CalibrateConfig& cfg) {
  DS_RETURN_IF_ERROR(RequireCudaDeviceToMeasure("calibrate"));
  int device_count = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&device_count));
  if (cfg.device < 0 || cfg.device >= device_count)
    return absl::InvalidArgumentError(absl::StrFormat("--device=%d, but %d device(s) present", cfg.device, device_count));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(cfg.device));

  // Every (case, batch) that the case factory can build; the rest are skipped with the reason.
  std::vector<CaseBatch> batches;
  std::vector<int32_t> batch_of;
  ojson skipped = ojson::array();
  for (SeedCase c : cfg.cases)
    for (int32_t b : cfg.batches) {
      CaseOptions o;
      o.batch = b;
      o.seed = cfg.seed;
      auto made = MakeSeedCase(c, o);
      if (!made.ok()) {
        if (b == kReferenceBatch)
          return absl::Status(made.status().code(), absl::StrCat("case ", BenchCaseName(c), " at the reference batch: ",
                                                                 made.status().message()));
        skipped.push_back({{"case", BenchCaseName(c)}, {"batch", b}, {"reason", std::string(made.status().message())}});
        continue;
      }
      batches.push_back(*std::move(made));
      batch_of.push_back(b);
    }
  DS_ASSIGN_OR_RETURN(std::unique_ptr<GpuSuite> suite,
                      GpuSuite::Create(CapacityForBatches(batches), ModelConsts{}, static_cast<int>(cfg.impls.size())));
  DS_ASSIGN_OR_RETURN(std::unique_ptr<GpuRegionCheck> check,
                      GpuRegionCheck::Create(suite->layout(), CapacityForBatches(batches), 1));
  timing::TimingOptions opt;
  opt.reps = cfg.reps;
  opt.warmup = cfg.warmup;
  opt.l2 = cfg.cold_l2 ? timing::L2Mode::kCold : timing::L2Mode::kWarm;

  ojson measurements = ojson::array();
  std::vector<CalibrationPoint> points;
  ojson floors = ojson::array();
  try {
    timing::L2Flusher flusher(cfg.device);
    for (size_t i = 0; i < batches.size(); ++i) {
      const CaseBatch& b = batches[i];
      std::fprintf(stderr, "calibrate: %s batch %d (R=%d, N=%d)\n", BenchCaseName(b.seed_case).c_str(), batch_of[i],
                   b.sizes.num_reqs, b.sizes.num_tokens);
      const timing::Floors f = timing::MeasureFloors(suite->stream(), flusher, opt);
      floors.push_back({{"case", BenchCaseName(b.seed_case)}, {"batch", batch_of[i]}, {"graph_us", f.graph.median_us}});
      DS_ASSIGN_OR_RETURN(const std::vector<MetadataRow> rows,
                          MeasureBatch(*suite, *check, flusher, opt, b, cfg.impls, /*with_eager=*/false, f));
      for (const MetadataRow& r : rows) {
        if (r.bug > 0)
          return absl::InternalError(absl::StrFormat("calibrate: %s / %s at batch %d differs from the reference: %s",
                                                     r.case_name, std::string(ImplName(r.impl)), batch_of[i], r.check));
        points.push_back({r.impl, r.seed_case, batch_of[i], r.num_tokens, r.stats.median_us});
        measurements.push_back({{"impl", std::string(ImplName(r.impl))},
                                {"case", r.case_name},
                                {"batch", batch_of[i]},
                                {"num_reqs", r.num_reqs},
                                {"num_tokens", r.num_tokens},
                                {"method", r.graph_timing_only ? "graph (timing only)" : "graph"},
                                {"gpu_us_median", r.stats.median_us},
                                {"gpu_us_p10", r.stats.p10_us},
                                {"gpu_us_p90", r.stats.p90_us},
                                {"samples", r.stats.n},
                                {"launches", r.launches},
                                {"floor_us", r.floor_us}});
      }
    }
  } catch (const CudaError& e) {
    return absl::InternalError(absl::StrCat("calibrate: ", e.what()));
  }

  ojson doc;
  ojson meta;
  try {
    meta = ResultMeta("dspark-sim calibrate", "dspark-sim/calibration", 1, cfg.argv, cfg.device);
  } catch (const CudaError& e) {
    return absl::InternalError(absl::StrCat("calibrate: reading the device: ", e.what()));
  }
  meta["date"] = meta["date_utc"];
  meta["l2_mode"] = cfg.cold_l2 ? "cold" : "warm";
  meta["reps"] = cfg.reps;
  meta["reference_batch"] = kReferenceBatch;
  meta["fit"] =
      "gpu_us.<case>: median GPU µs of the builder suite at batch 16 (graph replay, cold L2 unless l2_mode says "
      "otherwise; chain / cached: a graph of their ops captured for timing only). gpu_us_per_token: least-squares "
      "slope of the decode-like cases' medians above their batch-16 value against max(0, N - 96) tokens. host_us is "
      "not measured (this C++ host path is not a Python engine's): the model's defaults stay in force.";
  meta["measurements"] = measurements;
  meta["floors"] = floors;
  meta["skipped"] = skipped;
  doc["meta"] = meta;
  const ojson metadata = FitCalibration(points, cfg.impls, cfg.cases);
  doc["metadata"] = metadata;

  const fs::path path(cfg.out);
  if (path.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
  }
  if (absl::Status s = WriteFileAtomically(cfg.out, doc.dump(2) + "\n"); !s.ok())
    return absl::Status(s.code(), absl::StrCat("--out: ", s.message()));
  // The file must be what the CPU time model accepts.
  auto loaded = LoadCalibration(cfg.out);
  if (!loaded.ok())
    return absl::InternalError(absl::StrCat("calibrate wrote '", cfg.out,
                                            "' but the time model rejects it: ", loaded.status().message()));
  std::printf("# dspark-sim calibrate: %s, driver %s, %s\n\n", meta["gpu"].get<std::string>().c_str(),
              meta["driver"].get<std::string>().c_str(), meta["date_utc"].get<std::string>().c_str());
  std::printf("| impl | %s | µs/token above 96 |\n|---|", [&] {
    std::string h;
    for (SeedCase c : cfg.cases) absl::StrAppend(&h, h.empty() ? "" : " | ", BenchCaseName(c));
    return h;
  }().c_str());
  for (size_t i = 0; i <= cfg.cases.size(); ++i) std::printf("---:|");
  std::printf("\n");
  for (Impl impl : cfg.impls) {
    const ojson& e = metadata[std::string(ImplName(impl))];
    std::printf("| %s |", std::string(ImplName(impl)).c_str());
    for (SeedCase c : cfg.cases)
      std::printf(" %s |", e["gpu_us"].contains(BenchCaseName(c))
                               ? absl::StrFormat("%.2f", e["gpu_us"][BenchCaseName(c)].get<double>()).c_str()
                               : "-");
    std::printf(" %s |\n", e.contains("gpu_us_per_token")
                               ? absl::StrFormat("%.4f", e["gpu_us_per_token"].get<double>()).c_str()
                               : "-");
  }
  std::printf("\nwrote %s (%zu measured points; use it with `dspark-sim run --calibration %s`)\n", cfg.out.c_str(),
              measurements.size(), cfg.out.c_str());
  return absl::OkStatus();
}

int CalibrateCommand(int argc, char** argv) {
  return cli::RunParsedCommand<CalibrateConfig>("calibrate", argc, argv, Parse, [](CalibrateConfig& cfg) {
    const absl::Status s = Calibrate(cfg);
    if (!s.ok()) return cli::CommandError("calibrate", s, absl::IsFailedPrecondition(s) ? 2 : 1);
    return 0;
  });
}

const cli::RegisterCommand kRegisterCalibrate(
    "calibrate", "GPU: measure metadata cost per (impl, case, size) and write the CPU time model's calibration JSON",
    CalibrateCommand);

}  // namespace

}  // namespace dspark::sim
