#include "sim/studies/soak.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "sim/model/acceptance.h"
#include "sim/studies/config.h"
#include "sim/engine/engine.h"
#include "sim/workload/generators.h"
#include "sim/results/result_meta.h"
#include "sim/results/source_tree.h"
#include "sim/observe/invariants.h"
#include "sim/observe/metrics.h"
#include "sim/workload/rng.h"
#include "sim/model/time_model.h"
#include "sim/studies/soak_observers.h"
#include "sim/studies/workload.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dspark::sim {
namespace {

constexpr int kSchemaVersion = 1;
using namespace soak_internal;

RunConfig BatchConfig(const SoakOptions& o, uint64_t seed) {
  RunConfig c;
  c.seed = seed;
  c.workload = o.workload;
  c.num_requests = o.batch_requests;
  c.concurrency = o.concurrency;
  c.scheduler = o.scheduler;
  c.impls = {Impl::kFused};
  c.time_impl = Impl::kFused;
  c.check = false;
  c.out_dir = "-";
  return c;
}

// glibc raises its mmap threshold (up to 32 MiB) whenever a large mmapped block is freed, so
// later large vectors come from the heap and stay resident after they are freed: RSS then steps
// up by megabytes at points that say nothing about live memory. Pinning both thresholds keeps
// large blocks mmapped (returned to the system when freed) and the heap trimmed, so that RSS
// follows what the simulator holds. Process-wide, and left so after the soak.
std::string PinAllocator() {
#if defined(__GLIBC__)
  const int threshold = 128 * 1024;  // [bytes] glibc's initial default
  if (mallopt(M_MMAP_THRESHOLD, threshold) == 1 && mallopt(M_TRIM_THRESHOLD, threshold) == 1)
    return "glibc malloc, M_MMAP_THRESHOLD and M_TRIM_THRESHOLD pinned at 128 KiB";
  return "glibc malloc, mallopt failed: dynamic thresholds";
#else
  return "not glibc: allocator defaults";
#endif
}

std::string Hex(uint64_t v) { return absl::StrFormat("%016x", v); }

// (and stop the run); a non-OK status is a setup error.
absl::Status RunOnce(int run_index, const SoakOptions& o, const TimeModel& time_model, RssSampler* rss,
                     SoakRun* run) {
  InvariantOptions inv_options;
  inv_options.kv_every = o.kv_check_every;
  inv_options.rows_every = o.rows_check_every;
  InvariantChecker checker(o.scheduler, inv_options);
  uint64_t digest = 0x72756e6469676573ULL;
  const auto t0 = std::chrono::steady_clock::now();
  ProgressMeter meter(o.progress, stderr, absl::StrFormat("soak run %d/2", run_index + 1), "steps", o.steps);
  for (int64_t b = 0; run->steps < o.steps; ++b) {
    const uint64_t seed = BatchSeed(o.seed, b);
    const RunConfig config = BatchConfig(o, seed);
    DS_ASSIGN_OR_RETURN(Workload workload, BuildWorkload(config));
    DS_ASSIGN_OR_RETURN(const AcceptanceParams acceptance_params,
                        AcceptancePreset(workload.acceptance_preset, o.scheduler.spec_k));
    const AcceptanceModel acceptance(acceptance_params, o.scheduler.spec_k);
    EngineOptions engine_options;
    engine_options.concurrency = workload.concurrency;
    engine_options.time_impl = config.time_impl;
    Engine engine(config.scheduler, workload.requests, acceptance, time_model, engine_options, seed);
    DigestObserver batch_digest;
    MetricsObserver metrics(workload.requests, /*step_record_stride=*/int64_t{1} << 62);
    engine.AddObserver(&checker);
    engine.AddObserver(&batch_digest);
    engine.AddObserver(&metrics);
    engine.AddObserver(rss);
    SoakProgress progress(&meter, run->steps);
    engine.AddObserver(&progress);
    const absl::Status status = engine.Run();
    // Every batch peaks at its end (the metrics series are longest): sampling there makes the
    // warm-up peak and the later peaks comparable, whatever the sampling period.
    DS_RETURN_IF_ERROR(rss->Sample());
    const std::string where = absl::StrFormat("run %d, batch %d (after %d steps of the run)", run_index + 1, b,
                                              run->steps);
    run->steps += engine.steps();
    if (!status.ok() && checker.ok()) {  // stopped by something other than a violation
      run->error = absl::StrCat(where, ": ", status.message());
      break;
    }
    nlohmann::json inv_section;
    const absl::Status inv = checker.Finish(&inv_section);
    run->kv_checks = checker.kv_checks();
    run->row_checks = checker.row_checks();
    if (!inv.ok()) {
      run->invariants_ok = false;
      run->first_violation = absl::StrCat(where, ": ", inv.message());
      break;
    }
    nlohmann::json m;
    if (absl::Status metrics_status = metrics.Finish(&m); !metrics_status.ok()) {
      run->error = absl::StrCat(where, ": ", metrics_status.message());
      break;
    }
    m.update(ServingResultJson(metrics.serving_result()));  // vLLM's keys (completed, tokens, latencies)
    batch_digest.MixText(m.dump());
    run->batch_digests.push_back(batch_digest.value());
    digest = SplitMix64(digest ^ batch_digest.value());
    ++run->batches;
    run->requests_finished += m["completed"].get<int64_t>();
    run->output_tokens += m["total_output_tokens"].get<int64_t>();
    run->preemptions += engine.scheduler().counters().preemptions;
    run->simulated_s += engine.now_s();
  }
  run->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  meter.End(run->steps, absl::StrFormat("%.0f steps/s", run->wall_s > 0 ? run->steps / run->wall_s : 0.0));
  for (uint64_t v : {static_cast<uint64_t>(run->steps), static_cast<uint64_t>(run->batches),
                     static_cast<uint64_t>(run->requests_finished), static_cast<uint64_t>(run->output_tokens),
                     static_cast<uint64_t>(run->preemptions), Bits(run->simulated_s)})
    digest = SplitMix64(digest ^ v);
  run->digest = digest;
  return absl::OkStatus();
}

}  // namespace

SchedulerConfig SoakSchedulerDefaults() {
  SchedulerConfig c;
  c.num_kv_blocks = 1536;
  return c;
}

absl::Status SoakOptions::Validate() const {
  if (steps < 1) return absl::InvalidArgumentError(absl::StrCat("--steps: expected >= 1, got ", steps));
  if (batch_requests < 1)
    return absl::InvalidArgumentError(absl::StrCat("--batch-requests: expected >= 1, got ", batch_requests));
  if (rss_sample_every < 1)
    return absl::InvalidArgumentError(absl::StrCat("--rss-sample-every: expected >= 1, got ", rss_sample_every));
  if (kv_check_every < 1)
    return absl::InvalidArgumentError(absl::StrCat("--kv-check-every: expected >= 1, got ", kv_check_every));
  if (rows_check_every < 0)
    return absl::InvalidArgumentError(absl::StrCat("--rows-check-every: expected >= 0, got ", rows_check_every));
  if (rss_limit_kib < 0)
    return absl::InvalidArgumentError(absl::StrCat("--rss-limit-mib: expected >= 0, got ", rss_limit_kib / 1024.0));
  if (concurrency < 0)
    return absl::InvalidArgumentError(absl::StrCat("--concurrency: expected >= 0, got ", concurrency));
  DS_RETURN_IF_ERROR(FindWorkloadPreset(workload).status());
  // The scheduler limits and the preset follow `run`'s rules.
  return BatchConfig(*this, seed).Validate();
}

absl::StatusOr<int64_t> ReadVmRssKiB() {
  std::ifstream in("/proc/self/status");
  if (!in) return absl::UnavailableError("cannot open /proc/self/status (VmRSS needs Linux procfs)");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) != 0) continue;
    std::string digits;
    for (char ch : line)
      if (ch >= '0' && ch <= '9') digits.push_back(ch);
    int64_t kib = 0;
    if (line.find("kB") == std::string::npos || !absl::SimpleAtoi(digits, &kib))
      return absl::InternalError(absl::StrCat("/proc/self/status: cannot parse '", line, "'"));
    return kib;
  }
  return absl::UnavailableError("/proc/self/status has no VmRSS line");
}

absl::StatusOr<SoakResult> RunSoak(const SoakOptions& o) {
  DS_RETURN_IF_ERROR(o.Validate());
  const std::string calibration = o.calibration.empty() ? BundledCalibrationPath() : o.calibration;
  TimeModelParams time_params = DefaultTimeModelParams();
  if (!calibration.empty()) {
    DS_ASSIGN_OR_RETURN(time_params, LoadCalibration(calibration));
  }
  const TimeModel time_model(time_params);

  SoakResult result;
  result.allocator_note = PinAllocator();
  result.warmup_step = (o.steps + 9) / 10;
  RssSampler rss(o.rss_sample_every, result.warmup_step, &result);
  for (int i = 0; i < 2; ++i) {
    DS_RETURN_IF_ERROR(RunOnce(i, o, time_model, &rss, &result.runs[i]));
    DS_RETURN_IF_ERROR(rss.Sample());
    (i == 0 ? result.rss_end_run1_kib : result.rss_end_kib) = result.rss.back().kib;
  }

  const SoakRun &a = result.runs[0], &b = result.runs[1];
  for (int i = 0; i < 2; ++i) {
    if (!result.runs[i].invariants_ok)
      result.failures.push_back(absl::StrCat("invariants: ", result.runs[i].first_violation));
    if (!result.runs[i].error.empty()) result.failures.push_back(absl::StrCat("run stopped: ", result.runs[i].error));
  }
  result.identical = a.digest == b.digest && a.batch_digests == b.batch_digests && a.steps == b.steps;
  const size_t common = std::min(a.batch_digests.size(), b.batch_digests.size());
  for (size_t i = 0; i < common && result.first_differing_batch < 0; ++i)
    if (a.batch_digests[i] != b.batch_digests[i]) result.first_differing_batch = static_cast<int64_t>(i);
  if (!result.identical)
    result.failures.push_back(absl::StrFormat(
        "determinism: run 1 digest %s (%d steps), run 2 digest %s (%d steps); first differing batch %d",
        Hex(a.digest), a.steps, Hex(b.digest), b.steps, result.first_differing_batch));
  if (!rss.baseline_taken()) {
    result.failures.push_back("rss: no baseline sample (the run stopped before the end of warm-up)");
  } else {
    result.rss_max_after_warmup_kib = rss.max_after_warmup();
    result.rss_growth_kib = rss.max_after_warmup() - result.rss_warmup_peak_kib;
    result.rss_ok = result.rss_growth_kib <= o.rss_limit_kib;
    if (!result.rss_ok)
      result.failures.push_back(absl::StrFormat(
          "rss: peak grew %d KiB after warm-up (peak %d KiB up to step %d, %d KiB after), limit %d KiB",
          result.rss_growth_kib, result.rss_warmup_peak_kib, result.warmup_step, rss.max_after_warmup(),
          o.rss_limit_kib));
  }
  for (int i = 0; i < 2; ++i)
    if (result.runs[i].invariants_ok && result.runs[i].error.empty() && result.runs[i].steps < o.steps)
      result.failures.push_back(absl::StrFormat("run %d: %d steps < --steps %d", i + 1, result.runs[i].steps, o.steps));
  return result;
}

nlohmann::json SoakResult::ToJson(const SoakOptions& o) const {
  nlohmann::json j;
  j["meta"] = ResultMeta({"dspark-sim soak", "", kSchemaVersion, o.argv, o.seed});
  j["config"] = {{"steps", o.steps},
                 {"workload", o.workload},
                 {"batch_requests", o.batch_requests},
                 {"concurrency", o.concurrency},
                 {"mode", std::string(SpecModeName(o.scheduler.mode))},
                 {"spec_k", o.scheduler.spec_k},
                 {"max_num_seqs", o.scheduler.max_num_seqs},
                 {"max_num_batched_tokens", o.scheduler.max_num_batched_tokens},
                 {"max_model_len", o.scheduler.max_model_len},
                 {"num_kv_blocks", o.scheduler.num_kv_blocks > 0 ? o.scheduler.num_kv_blocks
                                                                 : AutoKvBlocks(o.scheduler)},
                 {"cuda_graphs", o.scheduler.cuda_graphs},
                 {"metadata_check", false},
                 {"kv_check_every_steps", o.kv_check_every},
                 {"rows_check_every_steps", o.rows_check_every},
                 {"rss_sample_every_steps", o.rss_sample_every},
                 {"rss_limit_kib", o.rss_limit_kib}};
  nlohmann::json runs = nlohmann::json::array();
  for (const SoakRun& r : this->runs)
    runs.push_back({{"steps", r.steps},
                    {"batches", r.batches},
                    {"requests_finished", r.requests_finished},
                    {"output_tokens", r.output_tokens},
                    {"preemptions", r.preemptions},
                    {"simulated_s", r.simulated_s},
                    {"wall_s", r.wall_s},
                    {"steps_per_s", r.wall_s > 0 ? r.steps / r.wall_s : 0.0},
                    {"digest", Hex(r.digest)},
                    {"invariants_ok", r.invariants_ok},
                    {"first_violation", r.invariants_ok ? nlohmann::json(nullptr) : nlohmann::json(r.first_violation)},
                    {"error", r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error)},
                    {"kv_checks", r.kv_checks},
                    {"row_checks", r.row_checks}});
  j["runs"] = runs;
  j["determinism"] = {{"identical", identical},
                      {"digest_run1", Hex(this->runs[0].digest)},
                      {"digest_run2", Hex(this->runs[1].digest)},
                      {"first_differing_batch", first_differing_batch < 0 ? nlohmann::json(nullptr)
                                                                          : nlohmann::json(first_differing_batch)},
                      {"covers", "every step's plan summary, every request event, each batch's metrics summary"}};
  nlohmann::json samples = nlohmann::json::array();
  for (const RssSample& s : rss) samples.push_back({s.step, s.kib});
  j["rss"] = {{"units", "KiB (VmRSS of /proc/self/status); samples are [global step, KiB], run 2 continues the step count"},
              {"warmup_step", warmup_step},
              {"at_warmup_kib", rss_at_warmup_kib},
              {"warmup_peak_kib", rss_warmup_peak_kib},
              {"peak_after_warmup_kib", rss_max_after_warmup_kib},
              {"end_run1_kib", rss_end_run1_kib},
              {"end_kib", rss_end_kib},
              {"max_kib", rss_max_kib},
              {"growth_after_warmup_kib", rss_growth_kib},
              {"growth_after_warmup_pct",
               rss_warmup_peak_kib > 0 ? 100.0 * static_cast<double>(rss_growth_kib) / rss_warmup_peak_kib : 0.0},
              {"end_minus_at_warmup_kib", rss_end_kib - rss_at_warmup_kib},
              {"allocator", allocator_note},
              {"limit_kib", o.rss_limit_kib},
              {"ok", rss_ok},
              {"samples", samples}};
  j["invariants"] = {{"ok", this->runs[0].invariants_ok && this->runs[1].invariants_ok},
                     {"first_violation", !this->runs[0].invariants_ok   ? nlohmann::json(this->runs[0].first_violation)
                                         : !this->runs[1].invariants_ok ? nlohmann::json(this->runs[1].first_violation)
                                                                        : nlohmann::json(nullptr)}};
  j["ok"] = ok();
  j["failures"] = failures;
  return j;
}

}  // namespace dspark::sim
