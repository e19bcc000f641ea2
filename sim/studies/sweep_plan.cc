// The sweep's plan: the executors that run a point, the configuration's checks and the grid of
// points with their ids (sweep.h).
#include "sim/studies/sweep.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/common/status_macros.h"
#include "sim/exec/cuda_device.h"
#include "sim/results/out_folder.h"
#include "sim/workload/generators.h"

namespace dspark::sim {
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::map<std::string, PointRunner>& PointRunners() {
  static auto* runners = new std::map<std::string, PointRunner>();
  return *runners;
}

namespace {

const RegisterPointRunner kCpuRunner("cpu", [](const RunConfig& c) { return ExecuteRun(c); });

// FNV-1a, 64 bit: stable across builds and standard libraries (std::hash is not).
uint64_t Fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string SlugSafe(const std::string& text) {
  std::string out;
  for (char c : text) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  if (!out.empty() && out[0] == '-') out[0] = '_';  // a folder name never starts with '-'
  return out.empty() ? "_" : out;
}

// The workload label of each trace: its file's stem, unless another trace or a preset has that
// label; then as many of its parent folders as make it unique ("a/t.csv" and "b/t.csv" become
// a_t and b_t), so that rows, point ids and plot groups of two traces never mix. The same file
// listed twice (also through another spelling of its path or a link) is refused.
absl::StatusOr<std::vector<std::string>> TraceLabels(const std::vector<std::string>& traces,
                                                    const std::vector<std::string>& presets) {
  std::vector<std::vector<std::string>> parts(traces.size());
  std::vector<fs::path> resolved(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) {
    std::error_code ec;
    fs::path abs = fs::absolute(fs::path(traces[i]), ec).lexically_normal();
    fs::path canon = fs::weakly_canonical(abs, ec);
    resolved[i] = ec ? abs : canon;
    for (size_t j = 0; j < i; ++j)
      if (resolved[j] == resolved[i] && traces[j] != traces[i])  // the very same text: the plan's "same id"
        return absl::InvalidArgumentError(absl::StrCat("--trace: '", traces[i], "' and '", traces[j],
                                                       "' are the same file; list each trace once"));
    const fs::path stemmed = abs.parent_path() / abs.stem();
    for (const fs::path& part : stemmed)
      if (part != "/" && !part.empty()) parts[i].insert(parts[i].begin(), part.string());  // last component first
  }
  std::vector<size_t> depth(traces.size(), 1);
  const auto label = [&](size_t i) {
    std::vector<std::string> tail(parts[i].begin(), parts[i].begin() + std::min(depth[i], parts[i].size()));
    std::reverse(tail.begin(), tail.end());
    return SlugSafe(absl::StrJoin(tail, "_"));
  };
  // Every trace of a clashing label takes one more folder, all at once, until none clash.
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<std::string> now;
    for (size_t i = 0; i < traces.size(); ++i) now.push_back(label(i));
    for (size_t i = 0; i < traces.size(); ++i) {
      bool clash = std::find_if(presets.begin(), presets.end(),
                                [&](const std::string& w) { return SlugSafe(w) == now[i]; }) != presets.end();
      for (size_t j = 0; j < traces.size() && !clash; ++j) clash = j != i && now[j] == now[i];
      if (clash && depth[i] < parts[i].size()) {
        ++depth[i];
        changed = true;
      }
    }
  }
  std::vector<std::string> labels;
  for (size_t i = 0; i < traces.size(); ++i) labels.push_back(label(i));
  return labels;
}

}  // namespace

absl::StatusOr<PointRunner> FindPointRunner(const std::string& executor) {
  auto it = PointRunners().find(executor);
  if (it != PointRunners().end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [name, runner] : PointRunners()) names.push_back(name);
  if (executor == "gpu") {
    const std::string reason = NoCudaDeviceReason();
    return absl::NotFoundError(absl::StrCat(
        "--executor gpu: ", reason.empty() ? "" : reason + ": ",
        "GPU executor not available in this build (no point runner named 'gpu' is registered; available: ",
        absl::StrJoin(names, ", "), "); use --executor cpu"));
  }
  return absl::NotFoundError(absl::StrCat("--executor: unknown executor '", executor,
                                          "'; available: ", absl::StrJoin(names, ", ")));
}

absl::Status SweepConfig::Validate() const {
  if (out_dir.empty()) return absl::InvalidArgumentError("--out: expected a directory");
  if (!merge_inputs.empty()) return absl::OkStatus();
  // A name that is no point runner is the command line's error (exit 2), as in run; gpu without
  // a device or a CUDA build is found when the points run (exit 1).
  if (executor != "gpu")
    if (absl::StatusOr<PointRunner> runner = FindPointRunner(executor); !runner.ok())
      return absl::InvalidArgumentError(runner.status().message());
  if (workloads.empty() && traces.empty())
    return absl::InvalidArgumentError("give at least one --workload or --trace");
  if (concurrency.empty()) return absl::InvalidArgumentError("--concurrency: expected at least one value");
  if (batch_sizes.empty()) return absl::InvalidArgumentError("--batch-size: expected at least one value");
  if (impls.empty()) return absl::InvalidArgumentError("--time-impl: expected at least one implementation");
  if (modes.empty()) return absl::InvalidArgumentError("--mode: expected at least one mode");
  if (num_requests.empty()) return absl::InvalidArgumentError("--num-requests: expected at least one value");
  for (int32_t c : concurrency)
    if (c < 0) return absl::InvalidArgumentError(absl::StrCat("--concurrency: expected values >= 0, got ", c));
  for (int32_t b : batch_sizes)
    if (b < 1) return absl::InvalidArgumentError(absl::StrCat("--batch-size: expected values >= 1, got ", b));
  for (int64_t n : num_requests)
    if (n < 1 && n != kAutoRequests)
      return absl::InvalidArgumentError(absl::StrCat("--num-requests: expected values >= 1 or auto, got ", n));
  if (shard_count < 1 || shard_index < 0 || shard_index >= shard_count)
    return absl::InvalidArgumentError(absl::StrFormat(
        "--shard: expected i/n with n >= 1 and 0 <= i < n, got %d/%d", shard_index, shard_count));
  if (max_points == 0 || max_points < -1)
    return absl::InvalidArgumentError(absl::StrCat("--max-points: expected >= 1, got ", max_points));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SweepPoint>> PlanSweep(const SweepConfig& c) {
  DS_RETURN_IF_ERROR(c.Validate());
  struct WorkloadAxis {
    std::string preset, trace, label;
  };
  std::vector<WorkloadAxis> workloads;
  for (const std::string& w : c.workloads) {
    if (auto preset = FindWorkloadPreset(w); !preset.ok())
      return absl::InvalidArgumentError(absl::StrCat("--workload: ", preset.status().message()));
    workloads.push_back({w, "", SlugSafe(w)});
  }
  DS_ASSIGN_OR_RETURN(const std::vector<std::string> trace_labels, TraceLabels(c.traces, c.workloads));
  for (size_t i = 0; i < c.traces.size(); ++i) workloads.push_back({"", c.traces[i], trace_labels[i]});

  std::vector<SweepPoint> points;
  std::set<std::string> ids;
  for (const WorkloadAxis& w : workloads)
    for (int32_t batch : c.batch_sizes)
      for (int64_t requested : c.num_requests)
        for (int32_t conc : c.concurrency)
          for (SpecMode mode : c.modes)
            for (Impl impl : c.impls) {
              SweepPoint p;
              p.index = static_cast<int64_t>(points.size());
              p.group = p.index / static_cast<int64_t>(c.impls.size());
              p.workload = w.preset;
              p.trace = w.trace;
              p.workload_label = w.label;
              p.concurrency = conc;
              p.batch_size = batch;
              p.impl = impl;
              p.mode = mode;
              // The seed's SPEED-Bench rule; with no client limit, the run's own default.
              p.num_requests = requested != SweepConfig::kAutoRequests ? requested
                               : conc > 0 ? std::max<int64_t>(32, 2 * int64_t{conc})
                                          : -1;
              std::vector<std::string> args = {"run"};
              args.insert(args.end(), c.run_args.begin(), c.run_args.end());
              if (!w.preset.empty()) args.insert(args.end(), {"--workload", w.preset});
              else args.insert(args.end(), {"--trace", w.trace});
              args.insert(args.end(), {"--concurrency", std::to_string(conc), "--max-num-seqs",
                                       std::to_string(batch), "--mode", std::string(SpecModeName(mode)),
                                       "--time-impl", std::string(ImplKey(impl)), "--impl",
                                       c.check_impls == "same" ? std::string(ImplKey(impl)) : c.check_impls,
                                       "--seed", std::to_string(c.seed)});
              if (p.num_requests > 0) args.insert(args.end(), {"--num-requests", std::to_string(p.num_requests)});
              if (c.model != ModelKind::kV41) args.insert(args.end(), {"--model", std::string(ModelFlag(c.model))});
              std::vector<char*> argv;
              for (std::string& a : args) argv.push_back(a.data());
              std::string help;
              auto parsed = ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
              if (!parsed.ok())
                return absl::InvalidArgumentError(absl::StrCat(
                    "the options given to every point's run are not valid: ", parsed.status().message(),
                    " (run command line: dspark-sim ", absl::StrJoin(args, " "), ")"));
              p.config = std::move(*parsed);
              p.config.progress = ProgressStyle::kNone;  // the sweep's own meter reports points
              const ojson identity = {{"run", p.config.ToJson()}, {"executor", c.executor}};
              const std::string slug = absl::StrFormat(
                  "%s_c%d_b%d_n%s_%s_%s", w.label, conc, batch,
                  p.num_requests > 0 ? std::to_string(p.num_requests) : std::string("default"),
                  SpecModeName(mode), ImplKey(impl));
              p.id = absl::StrFormat("%s_%012x", slug, Fnv1a64(identity.dump()) & 0xffffffffffffull);
              DS_RETURN_IF_ERROR(CheckSafeName(p.id, "point id"));
              if (!ids.insert(p.id).second)
                return absl::InvalidArgumentError(absl::StrCat(
                    "two points have the same id '", p.id, "': an axis lists the same value twice"));
              p.config.out_dir = (fs::path(c.out_dir) / "points" / p.id).string();
              args.insert(args.end(), {"--out", p.config.out_dir});
              p.config.argv = args;
              p.run_argv = std::move(args);
              if (auto valid = p.config.Validate(); !valid.ok()) p.skip_reason = std::string(valid.message());
              points.push_back(std::move(p));
            }
  return points;
}

bool InShard(const SweepPoint& point, const SweepConfig& config) {
  return point.group % config.shard_count == config.shard_index;
}

}  // namespace dspark::sim
