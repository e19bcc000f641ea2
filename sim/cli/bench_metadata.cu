// `bench` (a): the metadata table, its markdown and the targets (bench_internal.cuh).
#include "sim/cli/bench_internal.cuh"

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

namespace dspark::sim::bench_internal {

namespace fs = std::filesystem;

absl::StatusOr<MetadataSection> RunMetadata(const BenchConfig& cfg, std::FILE* progress) {
  MetadataSection out;
  std::vector<CaseBatch> batches;
  for (SeedCase c : cfg.cases) {
    CaseOptions o;
    o.batch = cfg.batch;
    o.seed = cfg.seed;
    o.consts = ModelConstsFor(cfg.model);
    auto b = MakeSeedCase(c, o);
    if (!b.ok())
      return absl::Status(b.status().code(), absl::StrCat("case ", BenchCaseName(c), ": ", b.status().message()));
    batches.push_back(*std::move(b));
  }
  DS_ASSIGN_OR_RETURN(std::unique_ptr<GpuSuite> suite,
                      GpuSuite::Create(CapacityForBatches(batches), ModelConstsFor(cfg.model),
                                       static_cast<int>(cfg.impls.size())));
  DS_ASSIGN_OR_RETURN(std::unique_ptr<GpuRegionCheck> check,
                      GpuRegionCheck::Create(suite->layout(), CapacityForBatches(batches), 1));
  timing::TimingOptions opt;
  opt.reps = cfg.reps;
  opt.stopping = cfg.Stopping();
  // The seed's method beside the event method; a machine without CUPTI tracing says so in the
  // tables instead of failing the bench.
  absl::StatusOr<std::unique_ptr<timing::CuptiGraphTimer>> cupti = timing::CuptiGraphTimer::Create();
  if (!cupti.ok()) out.cupti_status = std::string(cupti.status().message());
  timing::CuptiGraphTimer* tracer = cupti.ok() ? cupti->get() : nullptr;
  opt.warmup = cfg.warmup;
  opt.l2 = cfg.cold_l2 ? timing::L2Mode::kCold : timing::L2Mode::kWarm;
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
                          MeasureBatch(*suite, *check, flusher, opt, b, cfg.impls, /*with_eager=*/true, floors, tracer));
      for (MetadataRow& r : rows) out.rows.push_back(std::move(r));
    }
  } catch (const CudaError& e) {
    return absl::InternalError(absl::StrCat("bench metadata: ", e.what()));
  }
  FillSpeedups(out.rows);
  return out;
}


namespace {

// The count each row of `method` took and why it stopped (sim/exec/sample_stopping.h).
template <typename Get>
void SamplesMarkdown(const BenchConfig& cfg, const std::vector<std::string>& cases, const char* method,
                     const Get& get, std::string* md) {
  absl::StrAppendFormat(md, "\nSamples per row (why the row stopped; relative standard error of the mean):\n\n");
  absl::StrAppend(md, ImplTableHead("Case", cfg.impls, [](Impl impl) { return std::vector<std::string>{ImplKeyStr(impl)}; }));
  for (const std::string& c : cases) {
    std::string line = absl::StrCat("| ", c, " |");
    for (Impl impl : cfg.impls) {
      const MetadataRow* r = get(c, method, impl);
      if (r != nullptr)
        absl::StrAppendFormat(&line, " %d (%s, %.2f%%)", r->stats.n, r->stop_reason, r->noise_pct);
      absl::StrAppend(&line, " |");
    }
    absl::StrAppend(md, line, "\n");
  }
}

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

}  // namespace

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

  absl::StrAppendFormat(md,
                        "## Metadata: GPU µs per builder suite, batch %d, L2 %s; samples per row: at least %d, then "
                        "until the relative standard error of the mean is <= %g%%, at most %d or %g s per row\n\n",
                        cfg.batch, cfg.cold_l2 ? "cold" : "warm", cfg.min_samples, cfg.max_noise_pct, cfg.reps,
                        cfg.max_time_s);
  for (const char* method : {"graph", "eager"}) {
    const bool graph = std::string(method) == "graph";
    absl::StrAppendFormat(md, "### %s method: median µs [p10-p90] (speedup vs chain)\n\n",
                          graph ? "Graph" : "Eager");
    absl::StrAppend(md, ImplTableHead(
                            "Case", cfg.impls,
                            [graph](Impl impl) {
                              return std::vector<std::string>{
                                  absl::StrCat(ImplKeyStr(impl), graph && !GraphCapturable(impl) ? " †" : "")};
                            },
                            {"floor µs"}));
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
    SamplesMarkdown(cfg, cases, method, get, md);
    if (graph)
      absl::StrAppend(md,
                      "\n† chain and cached read host boundaries and cannot be correct inside a graph; their graph "
                      "rows time a graph of the same ops captured for timing only (a replay repeats the capture-time "
                      "host data), as the seed's \"Before\" column was measured.\n");
    absl::StrAppend(md, "\n");
  }

  // The seed's layout: Before = (c) vllm-pre56562, After = (d) vllm-0.31 (graph method), the
  // speedup, fused-suite, and the seed's own speedups beside (seed 000, cold L2, batch 16).
  const bool has_chain = std::find(cfg.impls.begin(), cfg.impls.end(), Impl::kDeviceChain) != cfg.impls.end();
  const bool has_fused = std::find(cfg.impls.begin(), cfg.impls.end(), Impl::kFused) != cfg.impls.end();
  const bool has_suite = std::find(cfg.impls.begin(), cfg.impls.end(), Impl::kFusedSuite) != cfg.impls.end();
  if (has_chain && (has_fused || has_suite)) {
    absl::StrAppend(md,
                    "### Seed layout (graph method): Before = vllm-pre56562 (c), After = vllm-0.31 (d)\n\n",
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
  absl::StrAppend(md, ImplTableHead("Case", cfg.impls, [](Impl impl) {
    return std::vector<std::string>{ImplKeyStr(impl) + " graph", ImplKeyStr(impl) + " eager"};
  }));
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
  absl::StrAppend(md, ImplTableHead("Case", cfg.impls, [](Impl impl) { return std::vector<std::string>{ImplKeyStr(impl)}; }));
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
    add("fused-suite <= 2x the graph floor at decode batch 16 (docs/design.md s.8)",
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

}  // namespace dspark::sim::bench_internal
