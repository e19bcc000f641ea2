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
    ("out", po::value<std::string>()->default_value("results/bench"), "output directory (bench.json, bench_metadata.csv, bench_tpot.csv)")
    ("cold-l2", po::bool_switch(), "flush L2 (write max(2 x L2, 256 MiB)) before every sample, outside the timed region (default)")
    ("warm-l2", po::bool_switch(), "no flush")
    ("reps", po::value<int>()->default_value(200), "timed samples per metadata row (>= 100 for the method; >= 10 accepted)")
    ("warmup", po::value<int>()->default_value(10), "untimed samples before each row")
    ("impl", po::value<std::string>()->default_value("all"), absl::StrCat("implementations: a comma list, or all, of\n", ImplHelpText()).c_str())
    ("cases", po::value<std::string>()->default_value("all"), "metadata cases: comma list of prefill, chunked_prefill, mixed, decode, dspark_verify, dspark_adaptive_verify, dspark_draft, dspark_adaptive_draft, or all")
    ("batch", po::value<int32_t>()->default_value(16), "requests per metadata case")
    ("seed", po::value<uint64_t>()->default_value(1), "seed of the case batches and of the TPOT runs")
    ("no-metadata", po::bool_switch(), "skip the metadata table")
    ("no-tpot", po::bool_switch(), "skip the TPOT table")
    ("tpot-samples", po::value<int>()->default_value(4), "single-request TPOT runs per (mode, implementation), interleaved across implementations")
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
  if (warmup < 0) return absl::InvalidArgumentError(absl::StrFormat("--warmup=%d: need >= 0", warmup));
  if (impls.empty()) return absl::InvalidArgumentError("--impl: expected at least one implementation");
  if (cases.empty()) return absl::InvalidArgumentError("--cases: expected at least one case");
  if (batch < 1 || batch > 1024) return absl::InvalidArgumentError(absl::StrFormat("--batch=%d: need 1..1024", batch));
  if (tpot_samples < 1) return absl::InvalidArgumentError(absl::StrFormat("--tpot-samples=%d: need >= 1", tpot_samples));
  if (tpot && tpot_modes.empty()) return absl::InvalidArgumentError("--tpot-modes: expected at least one mode");
  if (full_run_requests < 1)
    return absl::InvalidArgumentError(absl::StrFormat("--full-run-requests=%d: need >= 1", full_run_requests));
  if (full_run_concurrency < 0 || full_run_concurrency > 256)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--full-run-concurrency=%d: need 0..256 (adaptive verification allocates in one block)", full_run_concurrency));
  if (out_dir.empty()) return absl::InvalidArgumentError("--out: expected a directory");
  if (!metadata && !tpot && !full_run)
    return absl::InvalidArgumentError("--no-metadata and --no-tpot without --full-run leave nothing to do");
  return absl::OkStatus();
}

absl::StatusOr<BenchConfig> ParseBenchArgs(int argc, char** argv, std::string* help) {
  BenchConfig c;
  for (int i = 0; i < argc; ++i) c.argv.emplace_back(argv[i]);
  const po::options_description desc = BenchOptions();
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return absl::InvalidArgumentError(absl::StrCat(e.what(), " (see dspark-sim bench --help)"));
  }
  if (vm.count("help")) {
    std::ostringstream text;
    text << desc;
    *help = text.str();
    return c;
  }
  c.out_dir = vm["out"].as<std::string>();
  if (vm["cold-l2"].as<bool>() && vm["warm-l2"].as<bool>())
    return absl::InvalidArgumentError("--cold-l2 and --warm-l2 contradict each other");
  c.cold_l2 = !vm["warm-l2"].as<bool>();
  c.reps = vm["reps"].as<int>();
  c.warmup = vm["warmup"].as<int>();
  auto impls = ParseImplKeyList(vm["impl"].as<std::string>());
  if (!impls.ok()) return absl::InvalidArgumentError(absl::StrCat("--impl: ", impls.status().message()));
  c.impls = *impls;
  DS_ASSIGN_OR_RETURN(c.cases, ParseBenchCases(vm["cases"].as<std::string>()));
  c.batch = vm["batch"].as<int32_t>();
  c.seed = vm["seed"].as<uint64_t>();
  c.metadata = !vm["no-metadata"].as<bool>();
  c.tpot = !vm["no-tpot"].as<bool>();
  c.tpot_samples = vm["tpot-samples"].as<int>();
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

std::string Md(double v, int digits = 2) { return absl::StrFormat("%.*f", digits, v); }

std::string ImplKeyStr(Impl impl) { return std::string(ImplName(impl)); }

std::string CsvCell(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  }
  if (v.is_number_float()) return absl::StrFormat("%.6g", v.get<double>());
  return v.dump();
}

std::string Csv(const ojson& meta, const ojson& rows, const std::vector<std::string>& columns) {
  std::string out = absl::StrCat("# meta: ", meta.dump(), "\n", absl::StrJoin(columns, ","), "\n");
  for (const ojson& row : rows) {
    std::vector<std::string> cells;
    for (const std::string& c : columns) cells.push_back(row.contains(c) ? CsvCell(row[c]) : std::string());
    absl::StrAppend(&out, absl::StrJoin(cells, ","), "\n");
  }
  return out;
}

TimeModelParams LoadTimeParams(const std::string& calibration, std::string* source, absl::Status* status) {
  const std::string path = calibration.empty() ? BundledCalibrationPath() : calibration;
  *source = path.empty() ? "built-in defaults (sim/time_model.cc)" : path;
  if (path.empty()) return DefaultTimeModelParams();
  auto p = LoadCalibration(path);
  if (!p.ok()) {
    *status = p.status();
    return DefaultTimeModelParams();
  }
  return *p;
}

// ---------------------------------------------------------------- (a) metadata table

struct MetadataSection {
  std::vector<MetadataRow> rows;
  std::vector<std::pair<std::string, timing::Floors>> floors;  // per case
  std::map<std::string, timing::SampleStats> cupti_floors;      // per case, the CUPTI method's
  std::string cupti_status = "ok";                              // why the CUPTI method is missing
  double flush_bytes = 0;
};

absl::StatusOr<MetadataSection> RunMetadata(const BenchConfig& cfg, std::FILE* progress) {
  MetadataSection out;
  std::vector<CaseBatch> batches;
  for (SeedCase c : cfg.cases) {
    CaseOptions o;
    o.batch = cfg.batch;
    o.seed = cfg.seed;
    auto b = MakeSeedCase(c, o);
    if (!b.ok())
      return absl::Status(b.status().code(), absl::StrCat("case ", BenchCaseName(c), ": ", b.status().message()));
    batches.push_back(*std::move(b));
  }
  DS_ASSIGN_OR_RETURN(std::unique_ptr<GpuSuite> suite,
                      GpuSuite::Create(CapacityForBatches(batches), ModelConsts{}, static_cast<int>(cfg.impls.size())));
  timing::TimingOptions opt;
  opt.reps = cfg.reps;
  opt.warmup = cfg.warmup;
  opt.l2 = cfg.cold_l2 ? timing::L2Mode::kCold : timing::L2Mode::kWarm;
  // The seed's method beside the event method; a machine without CUPTI tracing says so in the
  // tables instead of failing the bench.
  absl::StatusOr<std::unique_ptr<timing::CuptiGraphTimer>> cupti = timing::CuptiGraphTimer::Create();
  if (!cupti.ok()) out.cupti_status = std::string(cupti.status().message());
  timing::CuptiGraphTimer* tracer = cupti.ok() ? cupti->get() : nullptr;
  try {
    timing::L2Flusher flusher(cfg.device);
    out.flush_bytes = cfg.cold_l2 ? static_cast<double>(flusher.bytes()) : 0.0;
    for (const CaseBatch& b : batches) {
      const std::string name = BenchCaseName(b.seed_case);
      if (progress) std::fprintf(progress, "bench: metadata %s (R=%d, N=%d)\n", name.c_str(), b.sizes.num_reqs, b.sizes.num_tokens);
      const timing::Floors floors = timing::MeasureFloors(suite->stream(), flusher, opt);
      out.floors.emplace_back(name, floors);
      if (tracer != nullptr) {
        absl::StatusOr<timing::SampleStats> cf = MeasureCuptiFloor(*tracer, suite->stream(), flusher, opt);
        if (!cf.ok()) {
          out.cupti_status = std::string(cf.status().message());
          tracer = nullptr;
        } else {
          out.cupti_floors[name] = *cf;
        }
      }
      DS_ASSIGN_OR_RETURN(std::vector<MetadataRow> rows,
                          MeasureBatch(*suite, flusher, opt, b, cfg.impls, /*with_eager=*/true, floors, tracer));
      for (MetadataRow& r : rows) out.rows.push_back(std::move(r));
    }
  } catch (const CudaError& e) {
    return absl::InternalError(absl::StrCat("bench metadata: ", e.what()));
  }
  FillSpeedups(out.rows);
  return out;
}

double MedianOf(std::vector<double> v) { return timing::Summarize(std::move(v)).median_us; }

// The seed's layout by the seed's own method: per replay, the summed GPU durations of the graph's
// kernels, copies and fills from CUPTI's activity records (sim/exec/cupti_timer.h).
template <class Get>
void CuptiSeedTable(const std::vector<std::string>& cases, const Get& get,
                    const std::map<std::string, double>& seed_speedup, const MetadataSection& m, std::string* md) {
  absl::StrAppend(md,
                  "### Seed layout (CUPTI method, the seed's: summed GPU durations of the graph's operations per "
                  "replay, median)\n\n");
  if (m.cupti_status != "ok") {
    absl::StrAppend(md, "Not measured: ", m.cupti_status, "\n\n");
    return;
  }
  absl::StrAppend(md,
                  "| Case | Before (µs) | After (µs) | Speedup | seed's speedup | fused-suite (µs) | Speedup | "
                  "floor (µs) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  const auto us = [](const MetadataRow* r) { return r && r->cupti.n > 0 ? Md(r->cupti.median_us) : std::string(); };
  const auto ratio = [](const MetadataRow* a, const MetadataRow* b) {
    return a && b && a->cupti.n > 0 && b->cupti.n > 0 && b->cupti.median_us > 0
               ? Md(a->cupti.median_us / b->cupti.median_us) + "x"
               : std::string();
  };
  for (const std::string& c : cases) {
    const MetadataRow* ch = get(c, "graph", Impl::kDeviceChain);
    const MetadataRow* fu = get(c, "graph", Impl::kFused);
    const MetadataRow* fs_row = get(c, "graph", Impl::kFusedSuite);
    const auto seed = seed_speedup.find(c);
    const auto floor = m.cupti_floors.find(c);
    absl::StrAppendFormat(md, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", c, us(ch), us(fu), ratio(ch, fu),
                          seed != seed_speedup.end() ? Md(seed->second) + "x" : "", us(fs_row), ratio(ch, fs_row),
                          floor != m.cupti_floors.end() ? Md(floor->second.median_us) : "");
  }
  absl::StrAppend(md, "\n");
}

void MetadataMarkdown(const BenchConfig& cfg, const MetadataSection& m, std::string* md) {
  std::vector<std::string> cases;
  for (const MetadataRow& r : m.rows)
    if (std::find(cases.begin(), cases.end(), r.case_name) == cases.end()) cases.push_back(r.case_name);
  std::map<std::tuple<std::string, std::string, Impl>, const MetadataRow*> at;
  for (const MetadataRow& r : m.rows) at[{r.case_name, r.method, r.impl}] = &r;
  const auto get = [&](const std::string& c, const std::string& method, Impl impl) -> const MetadataRow* {
    auto it = at.find({c, method, impl});
    return it == at.end() ? nullptr : it->second;
  };
  std::map<std::string, const timing::Floors*> floors;
  for (const auto& [c, f] : m.floors) floors[c] = &f;

  absl::StrAppendFormat(md, "## Metadata: GPU µs per builder suite, batch %d, L2 %s, %d samples per row\n\n",
                        cfg.batch, cfg.cold_l2 ? "cold" : "warm", cfg.reps);
  for (const char* method : {"graph", "eager"}) {
    const bool graph = std::string(method) == "graph";
    absl::StrAppendFormat(md, "### %s method: median µs [p10-p90] (speedup vs chain)\n\n",
                          graph ? "Graph" : "Eager");
    std::string head = "| Case |", rule = "|---|";
    for (Impl impl : cfg.impls) {
      absl::StrAppend(&head, " ", ImplKeyStr(impl), graph && !GraphCapturable(impl) ? " †" : "", " |");
      absl::StrAppend(&rule, "---:|");
    }
    absl::StrAppend(md, head, " floor µs |\n", rule, "---:|\n");
    for (const std::string& c : cases) {
      std::string line = absl::StrCat("| ", c, " |");
      for (Impl impl : cfg.impls) {
        const MetadataRow* r = get(c, method, impl);
        if (r == nullptr) {
          absl::StrAppend(&line, " |");
          continue;
        }
        absl::StrAppendFormat(&line, " %.2f [%.2f-%.2f]", r->stats.median_us, r->stats.p10_us, r->stats.p90_us);
        if (impl != Impl::kChain && r->speedup_vs_chain > 0) absl::StrAppendFormat(&line, " (%.2fx)", r->speedup_vs_chain);
        absl::StrAppend(&line, " |");
      }
      const timing::Floors* f = floors.count(c) ? floors[c] : nullptr;
      absl::StrAppend(&line, " ", f ? Md(graph ? f->graph.median_us : f->eager.median_us) : "", " |\n");
      absl::StrAppend(md, line);
    }
    if (graph)
      absl::StrAppend(md,
                      "\n† chain and cached read host boundaries and cannot be correct inside a graph; their graph "
                      "rows time a graph of the same ops captured for timing only (a replay repeats the capture-time "
                      "host data), as the seed's \"Before\" column was measured.\n");
    absl::StrAppend(md, "\n");
  }

  // The seed's layout: Before = (c) vllm-pre56562, After = (d) vllm-56562 (graph method), the
  // speedup, fused-suite, and the seed's own speedups beside (seed 000, cold L2, batch 16).
  const bool has_chain = std::find(cfg.impls.begin(), cfg.impls.end(), Impl::kDeviceChain) != cfg.impls.end();
  const bool has_fused = std::find(cfg.impls.begin(), cfg.impls.end(), Impl::kFused) != cfg.impls.end();
  const bool has_suite = std::find(cfg.impls.begin(), cfg.impls.end(), Impl::kFusedSuite) != cfg.impls.end();
  if (has_chain && (has_fused || has_suite)) {
    absl::StrAppend(md,
                    "### Seed layout (graph method): Before = vllm-pre56562 (c), After = vllm-56562 (d)\n\n",
                    "| Case | Before (µs) | After (µs) | Speedup | seed's speedup | fused-suite (µs) | Speedup | "
                    "floor (µs) |\n",
                    "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    // Seed 000's table, Before / After, in the order of sim::StepCase's names.
    const std::map<std::string, double> seed_speedup = {
        {"prefill", 1.42},       {"chunked_prefill", 1.32},        {"mixed", 3.04},       {"decode", 4.13},
        {"dspark_verify", 3.04}, {"dspark_adaptive_verify", 3.33}, {"dspark_draft", 3.15}, {"dspark_adaptive_draft", 3.00}};
    const auto ratio = [](const MetadataRow* a, const MetadataRow* b) {
      return a && b && b->stats.median_us > 0 ? Md(a->stats.median_us / b->stats.median_us) + "x" : std::string();
    };
    for (const std::string& c : cases) {
      const MetadataRow* ch = get(c, "graph", Impl::kDeviceChain);
      const MetadataRow* fu = get(c, "graph", Impl::kFused);
      const MetadataRow* fs_row = get(c, "graph", Impl::kFusedSuite);
      const auto seed = seed_speedup.find(c);
      absl::StrAppendFormat(md, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", c, ch ? Md(ch->stats.median_us) : "",
                            fu ? Md(fu->stats.median_us) : "", ratio(ch, fu),
                            seed != seed_speedup.end() ? Md(seed->second) + "x" : "",
                            fs_row ? Md(fs_row->stats.median_us) : "", ratio(ch, fs_row),
                            floors.count(c) ? Md(floors[c]->graph.median_us) : "");
    }
    absl::StrAppend(md, "\n");
    CuptiSeedTable(cases, get, seed_speedup, m, md);
  }

  absl::StrAppend(md, "### Launches per builder suite (graph: nodes of the captured graph; eager: launches and copies issued)\n\n");
  std::string head = "| Case |", rule = "|---|";
  for (Impl impl : cfg.impls) {
    absl::StrAppend(&head, " ", ImplKeyStr(impl), " graph | ", ImplKeyStr(impl), " eager |");
    absl::StrAppend(&rule, "---:|---:|");
  }
  absl::StrAppend(md, head, "\n", rule, "\n");
  for (const std::string& c : cases) {
    std::string line = absl::StrCat("| ", c, " |");
    for (Impl impl : cfg.impls) {
      const MetadataRow* g = get(c, "graph", impl);
      const MetadataRow* e = get(c, "eager", impl);
      absl::StrAppend(&line, " ", g ? absl::StrCat(g->launches) : "", " | ", e ? absl::StrCat(e->launches) : "", " |");
    }
    absl::StrAppend(md, line, "\n");
  }
  absl::StrAppend(md, "\n### Eager: host µs per suite call (median; host work, launches and any sync)\n\n");
  absl::StrAppend(md, "| Case |");
  for (Impl impl : cfg.impls) absl::StrAppend(md, " ", ImplKeyStr(impl), " |");
  absl::StrAppend(md, "\n|---|");
  for (size_t i = 0; i < cfg.impls.size(); ++i) absl::StrAppend(md, "---:|");
  absl::StrAppend(md, "\n");
  for (const std::string& c : cases) {
    std::string line = absl::StrCat("| ", c, " |");
    for (Impl impl : cfg.impls) {
      const MetadataRow* e = get(c, "eager", impl);
      absl::StrAppend(&line, " ", e ? Md(e->host_us_median, 1) : "", " |");
    }
    absl::StrAppend(md, line, "\n");
  }
  absl::StrAppend(md, "\n### Differences from the reference (eager rows; cells)\n\n",
                  "| Case | impl | stale-host | padding residue | bug | check |\n|---|---|---:|---:|---:|---|\n");
  for (const MetadataRow& r : m.rows) {
    if (r.method != "eager") continue;
    absl::StrAppendFormat(md, "| %s | %s | %d | %d | %d | %s |\n", r.case_name, ImplKeyStr(r.impl), r.stale_host,
                          r.padding_residue, r.bug, r.check.size() > 160 ? r.check.substr(0, 157) + "..." : r.check);
  }
  absl::StrAppend(md, "\n");
}

// The issue's and DESIGN.md s.8's targets, graph method, same run: met or missed (never fatal).
ojson Targets(const MetadataSection& m, std::string* md) {
  std::map<std::pair<std::string, Impl>, const MetadataRow*> graph;
  for (const MetadataRow& r : m.rows)
    if (r.method == "graph") graph[{r.case_name, r.impl}] = &r;
  std::map<std::string, double> floor;
  for (const auto& [c, f] : m.floors) floor[c] = f.graph.median_us;
  ojson out = ojson::array();
  const auto add = [&](const std::string& what, bool met, const std::string& detail) {
    out.push_back({{"target", what}, {"met", met}, {"detail", detail}});
  };
  for (const char* c : {"decode", "dspark_verify", "dspark_adaptive_verify", "dspark_draft", "dspark_adaptive_draft"}) {
    const auto ch = graph.find({c, Impl::kChain}), fu = graph.find({c, Impl::kFused}), su = graph.find({c, Impl::kFusedSuite});
    if (ch != graph.end() && fu != graph.end())
      add(absl::StrCat("fused beats chain: ", c), fu->second->stats.median_us < ch->second->stats.median_us,
          absl::StrFormat("%.2f vs %.2f µs (%.2fx)", fu->second->stats.median_us, ch->second->stats.median_us,
                          fu->second->speedup_vs_chain));
    if (fu != graph.end() && su != graph.end())
      add(absl::StrCat("fused-suite beats fused: ", c), su->second->stats.median_us < fu->second->stats.median_us,
          absl::StrFormat("%.2f vs %.2f µs", su->second->stats.median_us, fu->second->stats.median_us));
  }
  const auto ch = graph.find({"decode", Impl::kDeviceChain}), fu = graph.find({"decode", Impl::kFused}),
             su = graph.find({"decode", Impl::kFusedSuite});
  if (ch != graph.end() && fu != graph.end() && fu->second->stats.median_us > 0) {
    const double speedup = ch->second->stats.median_us / fu->second->stats.median_us;
    add("decode speedup Before (c) -> After (d) within 30% of the seed's 4.13x", speedup >= 0.7 * 4.13 && speedup <= 1.3 * 4.13,
        absl::StrFormat("%.2fx", speedup));
  }
  if (su != graph.end() && floor.count("decode"))
    add("fused-suite <= 2x the graph floor at decode batch 16 (DESIGN.md s.8)",
        su->second->stats.median_us <= 2.0 * floor["decode"],
        absl::StrFormat("%.2f µs vs floor %.2f µs (%.2fx)", su->second->stats.median_us, floor["decode"],
                        floor["decode"] > 0 ? su->second->stats.median_us / floor["decode"] : 0.0));
  if (!out.empty()) {
    absl::StrAppend(md, "### Targets (graph method, this run)\n\n| target | met | detail |\n|---|---|---|\n");
    for (const ojson& t : out)
      absl::StrAppendFormat(md, "| %s | %s | %s |\n", t["target"].get<std::string>(),
                            t["met"].get<bool>() ? "yes" : "**no**", t["detail"].get<std::string>());
    absl::StrAppend(md, "\n");
  }
  return out;
}

// ---------------------------------------------------------------- (b) TPOT table

struct TpotRow {
  SpecMode mode;
  Impl impl;
  std::vector<TpotLoopResult> samples;
};

absl::StatusOr<ojson> RunTpot(const BenchConfig& cfg, std::string* md, std::FILE* progress) {
  std::string time_source;
  absl::Status calib_status;
  const TimeModelParams time_params = LoadTimeParams(cfg.calibration, &time_source, &calib_status);
  DS_RETURN_IF_ERROR(calib_status);

  // One pair of suites for every mode: the largest capacity any mode's scheduler needs.
  GpuSuiteCapacity cap{1, 1, 1};
  for (SpecMode mode : cfg.tpot_modes) {
    SchedulerConfig sc;
    sc.mode = mode;
    const GpuSuiteCapacity c = CapacityFor(sc);
    cap.max_tokens = std::max(cap.max_tokens, c.max_tokens);
    cap.max_reqs = std::max(cap.max_reqs, c.max_reqs);
    cap.max_bt_stride = std::max(cap.max_bt_stride, c.max_bt_stride);
  }
  DS_ASSIGN_OR_RETURN(std::unique_ptr<TpotLoop> loop, TpotLoop::Create(cap));

  ojson standin = ojson::array();
  {
    CudaStream stream;
    for (double us : {time_params.drafter.fixed_us, time_params.target.fixed_us}) {
      DS_ASSIGN_OR_RETURN(const double measured, MeasureForwardStandIn(us, stream.get()));
      standin.push_back({{"requested_us", us}, {"measured_us", measured}});
    }
  }

  std::vector<TpotRow> rows;
  ojson setup;
  for (SpecMode mode : cfg.tpot_modes) {
    RunConfig rc;
    rc.workload = "batch1-512";
    rc.num_requests = cfg.tpot_samples;
    rc.seed = cfg.seed;
    rc.scheduler.mode = mode;
    DS_ASSIGN_OR_RETURN(const Workload workload, BuildWorkload(rc));
    DS_ASSIGN_OR_RETURN(const AcceptanceParams acceptance,
                        AcceptancePreset(workload.acceptance_preset, rc.scheduler.spec_k));
    setup[std::string(SpecModeName(mode))] = {{"workload", workload.info},
                                              {"acceptance_preset", acceptance.name},
                                              {"acceptance_curve", acceptance.curve}};
    std::vector<TpotRow> mode_rows;
    for (Impl impl : cfg.impls) mode_rows.push_back({mode, impl, {}});
    for (int s = 0; s < cfg.tpot_samples; ++s) {
      const std::vector<RequestSpec> one = {workload.requests[static_cast<size_t>(s)]};
      for (TpotRow& row : mode_rows) {
        if (progress)
          std::fprintf(progress, "bench: TPOT mode %s, %s, sample %d/%d\n", std::string(SpecModeName(mode)).c_str(),
                       ImplKeyStr(row.impl).c_str(), s + 1, cfg.tpot_samples);
        TpotLoopOptions o;
        o.impl = row.impl;
        // One schedule for every implementation (the adaptive budget policy prices steps with the
        // fused costs), so that the runs of a sample differ only in their metadata path.
        o.scheduler = rc.scheduler;
        o.acceptance = acceptance;
        o.time_params = time_params;
        o.concurrency = 1;
        o.model_host = cfg.model_host;
        o.seed = cfg.seed + static_cast<uint64_t>(s);
        DS_ASSIGN_OR_RETURN(TpotLoopResult r, loop->Run(o, one));
        row.samples.push_back(std::move(r));
      }
    }
    for (TpotRow& r : mode_rows) rows.push_back(std::move(r));
  }

  // Aggregate: medians over the samples of each run's means; throughput pooled.
  ojson out = ojson::array();
  std::map<std::pair<SpecMode, Impl>, double> tpot;
  for (const TpotRow& row : rows) {
    std::vector<double> tp, tt, itl, al;
    double tokens = 0, duration = 0;
    int64_t steps = 0, syncs = 0, staging = 0, client = 0, late = 0, topb = 0;
    double host_us = 0, fwd_us = 0, launches = 0;
    for (const TpotLoopResult& r : row.samples) {
      tp.push_back(r.tpot_ms_mean);
      tt.push_back(r.ttft_ms_mean);
      itl.push_back(r.itl_ms_mean);
      al.push_back(r.mean_acceptance_length);
      tokens += static_cast<double>(r.output_tokens);
      duration += r.duration_s;
      steps += r.steps;
      syncs += r.impl_host_syncs;
      staging += r.staging_syncs;
      client += r.client_syncs;
      late += r.late_captures;
      topb += r.topb_launches;
      host_us += r.host_us_per_step * r.steps;
      fwd_us += r.forward_us_per_step * r.steps;
      launches += r.launches_per_step * r.steps;
    }
    const double median_tpot = MedianOf(tp);
    tpot[{row.mode, row.impl}] = median_tpot;
    const timing::SampleStats tps = timing::Summarize(tp);
    ojson j;
    j["mode"] = std::string(SpecModeName(row.mode));
    j["impl"] = ImplKeyStr(row.impl);
    j["tpot_ms"] = median_tpot;
    j["ttft_ms"] = MedianOf(tt);
    j["itl_ms"] = MedianOf(itl);
    j["output_tok_s"] = duration > 0 ? tokens / duration : 0.0;
    j["samples"] = static_cast<int64_t>(row.samples.size());
    j["tpot_ms_samples"] = tp;
    j["tpot_ms_p10"] = tps.p10_us;
    j["tpot_ms_p90"] = tps.p90_us;
    j["mean_acceptance_length"] = al.empty() ? 0.0 : std::accumulate(al.begin(), al.end(), 0.0) / al.size();
    const double n = steps > 0 ? static_cast<double>(steps) : 1.0;
    j["steps"] = steps;
    j["host_us_per_step"] = host_us / n;
    j["forward_standin_us_per_step"] = fwd_us / n;
    j["launches_per_step"] = launches / n;
    j["impl_host_syncs_per_step"] = static_cast<double>(syncs) / n;
    j["staging_syncs_per_step"] = static_cast<double>(staging) / n;
    j["client_syncs"] = client;
    j["late_captures"] = late;
    j["topb_launches"] = topb;
    out.push_back(std::move(j));
  }
  for (ojson& j : out) {
    const auto chain = tpot.find({*ParseSpecMode(j["mode"].get<std::string>()), Impl::kChain});
    j["reduction_vs_chain_pct"] = chain != tpot.end() && chain->second > 0
                                      ? 100.0 * (1.0 - j["tpot_ms"].get<double>() / chain->second)
                                      : 0.0;
  }

  absl::StrAppendFormat(md,
                        "## Batch-1 TPOT [ms/token], 512 in / 128 out, median of %d interleaved single-request "
                        "runs (reduction vs chain)\n\n",
                        cfg.tpot_samples);
  std::string head = "| Mode |", rule = "|---|";
  for (Impl impl : cfg.impls) {
    absl::StrAppend(&head, " ", ImplKeyStr(impl), " |");
    absl::StrAppend(&rule, "---:|");
  }
  absl::StrAppend(md, head, "\n", rule, "\n");
  for (SpecMode mode : cfg.tpot_modes) {
    std::string line = absl::StrCat("| ", SpecModeName(mode), " |");
    for (const ojson& j : out) {
      if (j["mode"] != std::string(SpecModeName(mode))) continue;
      absl::StrAppendFormat(&line, " %.3f", j["tpot_ms"].get<double>());
      if (j["impl"] != "chain" && tpot.count({mode, Impl::kChain}))
        absl::StrAppendFormat(&line, " (%.1f%%)", j["reduction_vs_chain_pct"].get<double>());
      absl::StrAppend(&line, " |");
    }
    absl::StrAppend(md, line, "\n");
  }
  absl::StrAppend(md, "\n| Mode | impl | TTFT ms | ITL ms | output tok/s | accept len | host µs/step | syncs/step (impl + staging) | late captures |\n",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const ojson& j : out)
    absl::StrAppendFormat(md, "| %s | %s | %.3f | %.3f | %.1f | %.2f | %.1f | %.2f | %d |\n",
                          j["mode"].get<std::string>(), j["impl"].get<std::string>(), j["ttft_ms"].get<double>(),
                          j["itl_ms"].get<double>(), j["output_tok_s"].get<double>(),
                          j["mean_acceptance_length"].get<double>(), j["host_us_per_step"].get<double>(),
                          j["impl_host_syncs_per_step"].get<double>() + j["staging_syncs_per_step"].get<double>(),
                          j["late_captures"].get<int64_t>());
  absl::StrAppend(md, "\nForward stand-in check (one spin kernel, CUDA events):");
  for (const ojson& s : standin)
    absl::StrAppendFormat(md, " requested %.1f µs -> %.1f µs;", s["requested_us"].get<double>(),
                          s["measured_us"].get<double>());
  absl::StrAppendFormat(md, "\nTime model of the loop: %s; host stand-in %s.\n\n", time_source,
                        cfg.model_host ? "on (time model's host terms)" : "off");

  ojson section;
  section["rows"] = std::move(out);
  section["setup"] = {{"modes", setup},
                      {"adaptive_budget_priced_with", "fused (the same schedule for every implementation)"},
                      {"time_model", time_source},
                      {"host_standin", cfg.model_host ? "model" : "off"},
                      {"forward_standin_check", standin},
                      {"method",
                       "TPOT loop (sim/tpot_loop.cuh): real scheduler, the implementation's metadata on the GPU "
                       "(graph replay when padded and capturable, else eager), a forward stand-in kernel of the time "
                       "model's forward time; times from CUDA events of each step's completion. tpot_ms / ttft_ms / "
                       "itl_ms: median over samples of each single-request run's mean; output_tok_s: tokens over "
                       "summed durations."}};
  return section;
}

// ---------------------------------------------------------------- (c) full run

absl::StatusOr<ojson> RunFull(const BenchConfig& cfg, std::string* md, std::vector<std::string>* bugs,
                              std::vector<std::string>* warnings, std::FILE* progress) {
  RunConfig rc;
  rc.argv = {"bench --full-run"};
  rc.workload = "speed-8k";
  rc.num_requests = cfg.full_run_requests;
  rc.concurrency = cfg.full_run_concurrency;
  rc.seed = cfg.seed;
  rc.scheduler.mode = SpecMode::kAdaptive;
  rc.impls = cfg.impls;
  rc.time_impl = Impl::kFused;
  rc.check = false;
  rc.executor = "gpu";
  rc.gpu_cold_l2 = cfg.cold_l2;
  rc.calibration = cfg.calibration;
  rc.out_dir = (fs::path(cfg.out_dir) / "full_run").string();
  rc.steps_csv_stride = 1;
  if (progress)
    std::fprintf(progress, "bench: full run, speed-8k adaptive, %lld requests at concurrency %d, impls %s\n",
                 static_cast<long long>(rc.num_requests), rc.concurrency,
                 absl::StrJoin(cfg.impls, ",", [](std::string* o, Impl i) { o->append(ImplKeyStr(i)); }).c_str());
  ojson section;
  section["config"] = {{"workload", "speed-8k"},
                       {"mode", "adaptive"},
                       {"requests", rc.num_requests},
                       {"concurrency", rc.concurrency},
                       {"seed", rc.seed},
                       {"out", rc.out_dir}};
  absl::StatusOr<RunResult> result = ExecuteRun(rc);
  absl::StrAppendFormat(md, "## Full run: speed-8k, adaptive verification, %d requests at concurrency %d, every step through the GPU executor\n\n",
                        rc.num_requests, rc.concurrency);
  if (!result.ok()) {
    section["status"] = "failed";
    section["error"] = std::string(result.status().message());
    bugs->push_back(absl::StrCat("full run: ", result.status().message()));
    absl::StrAppend(md, "FAILED: ", result.status().message(), "\n\n");
    return section;
  }
  const nlohmann::json& g = result->summary["gpu_executor"];
  section["status"] = "ok";
  section["steps"] = result->steps;
  section["topb_on_device"] = g["topb_on_device"];
  section["metrics"] = {{"tpot_ms_mean", result->summary["mean_tpot_ms"]},
                        {"mean_acceptance_length", result->summary["metrics"]["speculative"]["mean_acceptance_length"]}};
  absl::StrAppendFormat(md, "%d steps; top-B allocation ran on the device in %d steps (host qsl stale in %d).\n\n",
                        result->steps, g["topb_on_device"]["launches"].get<int64_t>(),
                        g["topb_on_device"]["host_qsl_stale_steps"].get<int64_t>());
  absl::StrAppend(md,
                  "| impl | graph replays | eager runs | captures | stale-host cells (steps) | padding residue cells (steps) | bug | GPU µs median [p10-p90] | launches/step | syncs/step |\n",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (Impl impl : cfg.impls) {
    const std::string key = ImplKeyStr(impl);
    const nlohmann::json& j = g["impls"][key];
    section["impls"][key] = {{"stale_host", j["stale_host"]},
                             {"padding_residue", j["padding_residue"]},
                             {"bug", j["bug"]},
                             {"steps_with", j["steps_with"]},
                             {"graph_replays", j["graph_replays"]},
                             {"eager_runs", j["eager_runs"]},
                             {"captures", j["captures"]},
                             {"distinct_graph_keys", j["distinct_graph_keys"]},
                             {"gpu_us", j.value("gpu_us", nlohmann::json())},
                             {"launches_per_step", j["launches_per_step"]},
                             {"host_syncs_per_step", j["host_syncs_per_step"]},
                             {"staging_syncs_per_step", j["staging_syncs_per_step"]}};
    const nlohmann::json gpu = j.value("gpu_us", nlohmann::json::object());
    absl::StrAppendFormat(md, "| %s | %d | %d | %d | %d (%d) | %d (%d) | %d | %s | %.1f | %.2f |\n", key,
                          j["graph_replays"].get<int64_t>(), j["eager_runs"].get<int64_t>(),
                          j["captures"].get<int64_t>(), j["stale_host"].get<int64_t>(),
                          j["steps_with"]["stale_host"].get<int64_t>(), j["padding_residue"].get<int64_t>(),
                          j["steps_with"]["padding_residue"].get<int64_t>(), j["bug"].get<int64_t>(),
                          gpu.contains("median")
                              ? absl::StrFormat("%.2f [%.2f-%.2f]", gpu["median"].get<double>(),
                                                gpu["p10"].get<double>(), gpu["p90"].get<double>())
                              : std::string("-"),
                          j["launches_per_step"].get<double>(),
                          j["host_syncs_per_step"].get<double>() + j["staging_syncs_per_step"].get<double>());
    const int64_t total = j["stale_host"].get<int64_t>() +
                          (impl.info().traits.old_indexer_chain ? 0 : j["padding_residue"].get<int64_t>()) +
                          j["bug"].get<int64_t>();
    if (!ReadsHostBoundaries(impl) && total != 0)
      bugs->push_back(absl::StrFormat("full run: %s has %d differing cells (must be 0)", key, total));
    if (ReadsHostBoundaries(impl) && j["stale_host"].get<int64_t>() == 0)
      warnings->push_back(absl::StrFormat(
          "full run: %s shows no stale-host divergence (expected some under adaptive verification)", key));
  }
  absl::StrAppend(md, "\nA bug in any implementation stops the run. Only the host mappings of vllm-pre47474 and "
                      "vllm-47474 may show stale-host divergence (where the host split is stale), and only the old "
                      "indexer chain of (a)-(c) padding residue; vllm-56562 and fused-suite must show 0 in every "
                      "column.\n\n");
  return section;
}

}  // namespace

absl::StatusOr<BenchOutcome> RunBench(const BenchConfig& cfg) {
  DS_RETURN_IF_ERROR(cfg.Validate());
  DS_RETURN_IF_ERROR(RequireCudaDeviceToMeasure("bench"));
  int device_count = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&device_count));
  if (cfg.device < 0 || cfg.device >= device_count)
    return absl::InvalidArgumentError(
        absl::StrFormat("--device=%d, but %d CUDA device(s) present", cfg.device, device_count));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(cfg.device));
  std::error_code ec;
  fs::create_directories(cfg.out_dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("--out: cannot create '", cfg.out_dir, "': ", ec.message()));

  BenchOutcome res;
  std::FILE* progress = stderr;
  ojson meta;
  try {
    meta = ResultMeta("dspark-sim bench", "dspark-sim/bench", kBenchSchemaVersion, cfg.argv, cfg.device);
  } catch (const CudaError& e) {
    return absl::InternalError(absl::StrCat("bench: reading the device: ", e.what()));
  }
  meta["l2_mode"] = cfg.cold_l2 ? "cold" : "warm";
  meta["reps"] = cfg.reps;
  meta["warmup"] = cfg.warmup;
  meta["batch"] = cfg.batch;
  meta["seed"] = cfg.seed;
  meta["method"] =
      "GPU time per builder suite from CUDA events; graph rows: one replay per sample enqueued behind the L2 flush; "
      "eager rows: the suite issued after the flush completed (host work inside); floor: one empty kernel, same "
      "method, same run, measured before each case";
  std::string& md = res.markdown;
  absl::StrAppendFormat(&md, "# dspark-sim bench\n\n%s (sm_%s), driver %s, CUDA runtime %s, git %s%s, %s\n\n",
                        meta["gpu"].get<std::string>(), meta["compute_capability"].get<std::string>(),
                        meta["driver"].get<std::string>(), meta["cuda_runtime"].get<std::string>(),
                        meta["git_sha"].get<std::string>().substr(0, 12),
                        meta["git_dirty"].is_boolean() && meta["git_dirty"].get<bool>() ? " (dirty)" : "",
                        meta["date_utc"].get<std::string>());

  ojson& j = res.json;
  j["meta"] = meta;
  j["floor_us"] = ojson::object();
  j["metadata"] = ojson::array();
  j["tpot"] = ojson::array();
  if (cfg.metadata) {
    DS_ASSIGN_OR_RETURN(const MetadataSection m, RunMetadata(cfg, progress));
    j["meta"]["flush_bytes"] = m.flush_bytes;
    std::vector<double> graph_floor, eager_floor;
    ojson per_case = ojson::object();
    for (const auto& [c, f] : m.floors) {
      graph_floor.push_back(f.graph.median_us);
      eager_floor.push_back(f.eager.median_us);
      per_case[c] = {{"graph", f.graph.median_us},       {"graph_p10", f.graph.p10_us},
                     {"graph_p90", f.graph.p90_us},      {"eager", f.eager.median_us},
                     {"eager_p10", f.eager.p10_us},      {"eager_p90", f.eager.p90_us}};
    }
    // floor_us holds exactly {graph, eager} (the plots' schema); the per-case floors sit beside it.
    j["floor_us"] = {{"graph", MedianOf(graph_floor)}, {"eager", MedianOf(eager_floor)}};
    j["floor_us_by_case"] = per_case;
    for (const MetadataRow& r : m.rows) {
      j["metadata"].push_back(MetadataRowJson(r));
      if (r.bug > 0)
        res.bugs.push_back(absl::StrFormat("metadata %s / %s / %s: %d cells differ that are bugs: %s", r.case_name,
                                           ImplKeyStr(r.impl), r.method, r.bug, r.check));
      // Padding residue is the old indexer chain's own behaviour ((a)-(c)); stale-host divergence
      // only the host mappings' ((a), (b)). Anything else that differs is a defect.
      if ((!ReadsHostBoundaries(r.impl) && r.stale_host > 0) ||
          (!r.impl.info().traits.old_indexer_chain && r.padding_residue > 0))
        res.bugs.push_back(absl::StrFormat("metadata %s / %s / %s: differs from the reference: %s", r.case_name,
                                           ImplKeyStr(r.impl), r.method, r.check));
    }
    absl::StrAppendFormat(&md, "Floor (one empty kernel, same method, median over the cases): graph %.2f µs, eager %.2f µs\n\n",
                          j["floor_us"]["graph"].get<double>(), j["floor_us"]["eager"].get<double>());
    MetadataMarkdown(cfg, m, &md);
    j["targets"] = Targets(m, &md);
  }
  if (cfg.tpot) {
    DS_ASSIGN_OR_RETURN(ojson t, RunTpot(cfg, &md, progress));
    j["tpot"] = t["rows"];
    j["tpot_setup"] = t["setup"];
  }
  if (cfg.full_run) {
    DS_ASSIGN_OR_RETURN(ojson f, RunFull(cfg, &md, &res.bugs, &res.warnings, progress));
    j["full_run"] = std::move(f);
  }
  j["bugs"] = res.bugs;
  j["warnings"] = res.warnings;

  const fs::path out(cfg.out_dir);
  DS_RETURN_IF_ERROR(WriteFileAtomically(out / "bench.json", j.dump(2) + "\n"));
  if (cfg.metadata)
    DS_RETURN_IF_ERROR(WriteFileAtomically(
        out / "bench_metadata.csv",
        Csv(j["meta"], j["metadata"],
            {"case", "impl", "method", "gpu_us_median", "gpu_us_p10", "gpu_us_p90", "samples", "launches",
             "speedup_vs_chain", "floor_us", "ratio_vs_floor", "host_us_median", "stale_host", "padding_residue",
             "bug", "graph_timing_only", "num_reqs", "num_tokens"})));
  if (cfg.tpot)
    DS_RETURN_IF_ERROR(WriteFileAtomically(
        out / "bench_tpot.csv",
        Csv(j["meta"], j["tpot"],
            {"mode", "impl", "tpot_ms", "ttft_ms", "itl_ms", "output_tok_s", "samples", "tpot_ms_p10", "tpot_ms_p90",
             "reduction_vs_chain_pct", "mean_acceptance_length", "steps", "host_us_per_step",
             "forward_standin_us_per_step", "launches_per_step", "impl_host_syncs_per_step",
             "staging_syncs_per_step", "late_captures"})));
  absl::StrAppendFormat(&md, "wrote %s/bench.json%s%s\n", cfg.out_dir, cfg.metadata ? ", bench_metadata.csv" : "",
                        cfg.tpot ? ", bench_tpot.csv" : "");
  return res;
}

namespace {

int BenchCommand(int argc, char** argv) {
  std::string help;
  auto cfg = ParseBenchArgs(argc, argv, &help);
  if (!cfg.ok()) {
    std::fprintf(stderr, "dspark-sim bench: %s\n", std::string(cfg.status().message()).c_str());
    return 2;
  }
  if (!help.empty()) {
    std::printf("%s", help.c_str());
    return 0;
  }
  if (auto s = cfg->Validate(); !s.ok()) {
    std::fprintf(stderr, "dspark-sim bench: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (const absl::Status s = RequireCudaDeviceToMeasure("bench"); !s.ok()) {
    std::fprintf(stderr, "dspark-sim bench: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  auto outcome = RunBench(*cfg);
  if (!outcome.ok()) {
    std::fprintf(stderr, "dspark-sim bench: %s\n", std::string(outcome.status().message()).c_str());
    return outcome.status().code() == absl::StatusCode::kFailedPrecondition ? 2 : 1;
  }
  std::fputs(outcome->markdown.c_str(), stdout);
  std::fflush(stdout);
  for (const std::string& w : outcome->warnings) std::fprintf(stderr, "dspark-sim bench: warning: %s\n", w.c_str());
  if (!outcome->bugs.empty()) {
    for (const std::string& b : outcome->bugs) std::fprintf(stderr, "dspark-sim bench: BUG: %s\n", b.c_str());
    return 3;
  }
  return 0;
}

const cli::RegisterCommand kRegisterBench(
    "bench", "GPU: the seed's metadata table (8 cases x impls) and batch-1 TPOT table; --full-run for speed-8k",
    BenchCommand);

}  // namespace

}  // namespace dspark::sim
