#include "sim/studies/metadata_bench.cuh"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"

namespace dspark::sim {

std::string BenchCaseName(SeedCase c) {
  switch (c) {
    case SeedCase::kPrefill: return "prefill";
    case SeedCase::kChunkedPrefill: return "chunked_prefill";
    case SeedCase::kMixed: return "mixed";
    case SeedCase::kDecode: return "decode";
    case SeedCase::kVerify: return "dspark_verify";
    case SeedCase::kAdaptiveVerify: return "dspark_adaptive_verify";
    case SeedCase::kDraft: return "dspark_draft";
    case SeedCase::kAdaptiveDraft: return "dspark_adaptive_draft";
  }
  return "unknown";
}

absl::StatusOr<std::vector<SeedCase>> ParseBenchCases(const std::string& list) {
  std::vector<SeedCase> out;
  for (absl::string_view piece : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    piece = absl::StripAsciiWhitespace(piece);
    if (piece == "all") {
      for (SeedCase c : kAllSeedCases)
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
      continue;
    }
    bool found = false;
    for (SeedCase c : kAllSeedCases)
      if (piece == BenchCaseName(c) || piece == std::string(SeedCaseName(c))) {
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
        found = true;
      }
    if (!found)
      return absl::InvalidArgumentError(absl::StrCat(
          "--cases: unknown case '", piece,
          "' (expected prefill, chunked_prefill, mixed, decode, dspark_verify, dspark_adaptive_verify, dspark_draft, "
          "dspark_adaptive_draft, or all)"));
  }
  if (out.empty()) return absl::InvalidArgumentError("--cases: expected at least one case");
  return out;
}

GpuSuiteCapacity CapacityForBatches(const std::vector<CaseBatch>& batches) {
  GpuSuiteCapacity cap;
  cap.max_tokens = 1;
  cap.max_reqs = 1;
  cap.max_bt_stride = 1;
  for (const CaseBatch& b : batches) {
    cap.max_tokens = std::max({cap.max_tokens, b.sizes.capacity, b.sizes.num_tokens});
    cap.max_reqs = std::max(cap.max_reqs, b.sizes.num_reqs);
    cap.max_bt_stride = std::max(cap.max_bt_stride, b.sizes.bt_stride);
  }
  return cap;
}

namespace {

// The row's differing cells by kind and their description ("ok" when none), from `impl`'s
// outputs on the staged step, checked as the GPU executor checks a step (its defined regions,
// compared on the device with the reference of the device truth).
absl::Status CheckRow(GpuSuite& suite, GpuRegionCheck& check, Impl impl, MetadataRow* row) {
  DS_ASSIGN_OR_RETURN(const std::vector<SuiteRunResult> results, check.Check(suite, {impl}));
  const SuiteRunResult& result = results.front();
  row->stale_host = row->padding_residue = row->bug = 0;
  for (const FieldMismatch& m : result.mismatches) {
    if (m.kind == MismatchKind::kStaleHost) row->stale_host += m.count;
    else if (m.kind == MismatchKind::kPaddingResidue) row->padding_residue += m.count;
    else row->bug += m.count;
  }
  row->check = "ok";
  if (!result.mismatches.empty()) {
    row->check = std::string(absl::StripTrailingAsciiWhitespace(DescribeMismatches(result.mismatches)));
    absl::StrReplaceAll({{"\n", "; "}}, &row->check);
  }
  return absl::OkStatus();
}

void SetStop(const timing::SamplingOutcome& outcome, MetadataRow* row) {
  row->stop_reason = std::string(timing::StopReasonName(outcome.reason));
  row->noise_pct = 100.0 * outcome.noise;  // infinite below 2 samples: null in bench.json
}

// Times `call` per sample (sim/exec/gpu_timing.cuh); the first failing status of any call is returned.
// `host_us` (optional) receives the host time of each call, warm-up samples included.
absl::StatusOr<std::vector<double>> Sample(const std::function<absl::Status()>& call, cudaStream_t stream,
                                           timing::L2Flusher& flusher, const timing::TimingOptions& opt,
                                           bool wait_for_flush, std::vector<double>* host_us = nullptr,
                                           timing::SamplingOutcome* outcome = nullptr) {
  absl::Status first;
  std::vector<double> samples;
  try {
    samples = timing::TimeSamples(
        [&](cudaStream_t) {
          const auto t0 = std::chrono::steady_clock::now();
          const absl::Status s = call();
          if (host_us != nullptr)
            host_us->push_back(
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
          if (!s.ok() && first.ok()) first = s;
        },
        stream, flusher, opt, wait_for_flush, outcome);
  } catch (const CudaError& e) {
    return absl::InternalError(e.what());
  }
  DS_RETURN_IF_ERROR(first);
  return samples;
}

// The CUPTI method: tracing on, `capture` (re)instantiates the graph, one untimed replay, then per
// sample the L2 flush, a replay and the summed durations of its records. Tracing is off again
// when it returns, so the event samples of the next row run untraced.
absl::StatusOr<timing::SampleStats> CuptiSamples(timing::CuptiGraphTimer& cupti,
                                                 const std::function<absl::Status()>& capture,
                                                 const std::function<absl::Status()>& replay, cudaStream_t stream,
                                                 timing::L2Flusher& flusher, const timing::TimingOptions& opt) {
  const auto run = [&]() -> absl::StatusOr<timing::SampleStats> {
    DS_RETURN_IF_ERROR(cupti.Enable());
    DS_RETURN_IF_ERROR(capture());
    DS_RETURN_IF_ERROR(replay());
    CUDA_CHECK(cudaStreamSynchronize(stream));
    DS_RETURN_IF_ERROR(cupti.Discard());
    // The same stopping rule and loop as the event samples (bench: NVBench-style; otherwise opt.reps).
    DS_ASSIGN_OR_RETURN(std::vector<double> us,
                        timing::SampleUntilStopped(opt.Criterion(), [&]() -> absl::StatusOr<double> {
                          if (opt.l2 == timing::L2Mode::kCold) flusher.Flush(stream);
                          CUDA_CHECK(cudaStreamSynchronize(stream));
                          DS_RETURN_IF_ERROR(cupti.Discard());
                          DS_RETURN_IF_ERROR(replay());
                          CUDA_CHECK(cudaStreamSynchronize(stream));
                          DS_ASSIGN_OR_RETURN(const timing::CuptiGraphTimer::Sum sum, cupti.Take());
                          if (sum.records == 0)
                            return absl::UnavailableError("CUPTI returned no activity records for a graph replay");
                          return sum.us;
                        }));
    return timing::Summarize(std::move(us));
  };
  absl::StatusOr<timing::SampleStats> out;
  try {
    out = run();
  } catch (const CudaError& e) {
    out = absl::InternalError(e.what());
  }
  const absl::Status off = cupti.Disable();
  if (out.ok() && !off.ok()) return off;
  return out;
}

}  // namespace

absl::StatusOr<timing::SampleStats> MeasureCuptiFloor(timing::CuptiGraphTimer& cupti, cudaStream_t stream,
                                                      timing::L2Flusher& flusher, const timing::TimingOptions& opt) {
  CudaGraph graph;
  return CuptiSamples(
      cupti,
      [&] {
        graph = CudaGraph();
        timing::CaptureEmptyGraph(graph, stream);
        return absl::OkStatus();
      },
      [&] {
        graph.Replay(stream);
        return absl::OkStatus();
      },
      stream, flusher, opt);
}

absl::StatusOr<std::vector<MetadataRow>> MeasureBatch(GpuSuite& suite, GpuRegionCheck& check, timing::L2Flusher& flusher,
                                                      const timing::TimingOptions& opt, const CaseBatch& batch,
                                                      const std::vector<Impl>& impls, bool with_eager,
                                                      const timing::Floors& floors,
                                                      timing::CuptiGraphTimer* cupti) {
  const std::string case_name = BenchCaseName(batch.seed_case);
  int32_t real_reqs = 0;
  for (int32_t r = 0; r < batch.sizes.num_reqs; ++r) real_reqs += batch.qsl[r + 1] > batch.qsl[r] ? 1 : 0;
  const auto fail = [&](Impl impl, absl::string_view method, absl::string_view what, const absl::Status& s) {
    return absl::Status(s.code(), absl::StrFormat("case %s (batch %d, R=%d, N=%d), impl %s, %s: %s: %s", case_name,
                                                  real_reqs, batch.sizes.num_reqs, batch.sizes.num_tokens,
                                                  std::string(ImplName(impl)), method, what, s.message()));
  };
  if (absl::Status s = suite.Stage(batch.Inputs()); !s.ok())
    return absl::Status(s.code(), absl::StrCat("case ", case_name, ": GpuSuite::Stage: ", s.message()));
  cudaStream_t stream = suite.stream();

  std::vector<MetadataRow> rows;
  for (Impl impl : impls) {
    MetadataRow base;
    base.case_name = case_name;
    base.seed_case = batch.seed_case;
    base.impl = impl;
    base.batch = real_reqs;
    base.num_reqs = batch.sizes.num_reqs;
    base.num_tokens = batch.sizes.num_tokens;

    // Graph method.
    MetadataRow g = base;
    g.method = "graph";
    g.graph_timing_only = !GraphCapturable(impl);
    const absl::Status cap = GraphCapturable(impl) ? suite.Capture(impl) : suite.CaptureForTiming(impl);
    if (!cap.ok()) return fail(impl, "graph", "capture", cap);
    auto nodes = suite.GraphNodes(impl);
    if (!nodes.ok()) return fail(impl, "graph", "graph nodes", nodes.status());
    g.nodes = *nodes;
    g.launches = static_cast<int64_t>(nodes->total);
    g.counters = suite.last_counters(impl);
    if (absl::Status s = suite.Replay(impl); !s.ok()) return fail(impl, "graph", "first replay", s);
    timing::SamplingOutcome graph_outcome;
    auto graph_samples = Sample([&] { return suite.Replay(impl); }, stream, flusher, opt, /*wait_for_flush=*/false,
                                nullptr, &graph_outcome);
    if (!graph_samples.ok()) return fail(impl, "graph", "timed replays", graph_samples.status());
    g.stats = timing::Summarize(*graph_samples);
    SetStop(graph_outcome, &g);
    g.floor_us = floors.graph.median_us;
    if (absl::Status s = CheckRow(suite, check, impl, &g); !s.ok()) return fail(impl, "graph", "download and compare", s);
    if (cupti != nullptr) {
      auto cs = CuptiSamples(
          *cupti, [&] { return GraphCapturable(impl) ? suite.Capture(impl) : suite.CaptureForTiming(impl); },
          [&] { return suite.Replay(impl); }, stream, flusher, opt);
      if (!cs.ok()) return fail(impl, "graph", "CUPTI samples", cs.status());
      g.cupti = *cs;
    }
    rows.push_back(std::move(g));

    if (!with_eager) continue;
    MetadataRow e = base;
    e.method = "eager";
    std::vector<double> host_us;
    timing::SamplingOutcome eager_outcome;
    auto eager_samples = Sample([&] { return suite.Run(impl); }, stream, flusher, opt, /*wait_for_flush=*/true,
                                &host_us, &eager_outcome);
    if (!eager_samples.ok()) return fail(impl, "eager", "timed runs", eager_samples.status());
    e.stats = timing::Summarize(*eager_samples);
    SetStop(eager_outcome, &e);
    if (host_us.size() > static_cast<size_t>(opt.warmup)) host_us.erase(host_us.begin(), host_us.begin() + opt.warmup);
    e.host_us_median = timing::Summarize(host_us).median_us;
    e.counters = suite.last_counters(impl);
    e.launches = e.counters.Launches();
    e.floor_us = floors.eager.median_us;
    if (absl::Status s = CheckRow(suite, check, impl, &e); !s.ok()) return fail(impl, "eager", "download and compare", s);
    rows.push_back(std::move(e));
  }
  return rows;
}

void FillSpeedups(std::vector<MetadataRow>& rows) {
  // The baseline is the registry's (role baseline), the implementation the plots divide by.
  const absl::StatusOr<Impl> baseline = BaselineImpl();
  std::map<std::pair<std::string, std::string>, double> chain;
  for (const MetadataRow& r : rows)
    if (baseline.ok() && r.impl == *baseline) chain[{r.case_name, r.method}] = r.stats.median_us;
  for (MetadataRow& r : rows) {
    const auto it = chain.find({r.case_name, r.method});
    r.speedup_vs_chain = it != chain.end() && r.stats.median_us > 0 ? it->second / r.stats.median_us : 0.0;
  }
}

nlohmann::ordered_json MetadataRowJson(const MetadataRow& r) {
  nlohmann::ordered_json j;
  j["case"] = r.case_name;
  j["impl"] = std::string(ImplName(r.impl));
  j["method"] = r.method;
  j["gpu_us_median"] = r.stats.median_us;
  j["gpu_us_p10"] = r.stats.p10_us;
  j["gpu_us_p90"] = r.stats.p90_us;
  j["samples"] = r.stats.n;
  j["stop_reason"] = r.stop_reason;
  j["noise_pct"] = std::isfinite(r.noise_pct) ? nlohmann::ordered_json(r.noise_pct) : nlohmann::ordered_json(nullptr);
  if (r.cupti.n > 0) {
    j["cupti_us_median"] = r.cupti.median_us;
    j["cupti_us_p10"] = r.cupti.p10_us;
    j["cupti_us_p90"] = r.cupti.p90_us;
    j["cupti_samples"] = r.cupti.n;
  }
  j["launches"] = r.launches;
  j["speedup_vs_chain"] = r.speedup_vs_chain;
  j["stale_host"] = r.stale_host;
  j["padding_residue"] = r.padding_residue;
  j["bug"] = r.bug;
  // Detail keys.
  j["timing"] = r.method == "eager" ? "eager: events around the issued sequence, started after the flush completed"
                : r.graph_timing_only
                    ? "graph of the eager ops, for timing only (a replay repeats the capture-time host data)"
                    : "graph replay, enqueued behind the flush";
  j["graph_timing_only"] = r.graph_timing_only;
  j["gpu_us_mean"] = r.stats.mean_us;
  j["gpu_us_min"] = r.stats.min_us;
  j["gpu_us_max"] = r.stats.max_us;
  if (r.method == "eager") j["host_us_median"] = r.host_us_median;
  j["floor_us"] = r.floor_us;
  j["ratio_vs_floor"] = r.floor_us > 0 ? r.stats.median_us / r.floor_us : 0.0;
  j["batch"] = r.batch;
  j["num_reqs"] = r.num_reqs;
  j["num_tokens"] = r.num_tokens;
  if (r.method == "graph")
    j["graph_nodes"] = {{"total", r.nodes.total},
                        {"kernels", r.nodes.kernels},
                        {"memcpys", r.nodes.memcpys},
                        {"memsets", r.nodes.memsets},
                        {"other", r.nodes.other}};
  j["counted"] = {{"launches", r.counters.Launches()},   {"kernels", r.counters.kernels},
                  {"h2d_copies", r.counters.h2d_copies}, {"d2h_copies", r.counters.d2h_copies},
                  {"d2d_copies", r.counters.d2d_copies}, {"fills", r.counters.fills},
                  {"host_syncs", r.counters.host_syncs}, {"host_array_ops", r.counters.host_array_ops}};
  j["reads_host_boundaries"] = ReadsHostBoundaries(r.impl);
  j["check"] = r.check;
  return j;
}

}  // namespace dspark::sim
