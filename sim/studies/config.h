// Options of `dspark-sim run`, parsed from the command line (and --config FILE, same keys)
// only in the command function (sim/cmd_run.cc), then checked by Validate().
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "sim/model/scheduler.h"
#include "sim/workload/trace.h"

namespace dspark::sim {

struct RunConfig {
  std::vector<std::string> argv;  // as given, for summary.json meta
  std::string config_file;

  uint64_t seed = 0;
  // Workload: exactly one of a trace file or a preset.
  std::string trace_path;
  std::string workload;
  TraceFormat trace_format = TraceFormat::kAuto;
  bool skip_bad_rows = false;
  int32_t concurrency = -1;     // [requests in flight]; -1: the workload's default, 0: none
  double request_rate = std::numeric_limits<double>::infinity();  // [requests/s]
  bool request_rate_given = false;  // traces keep their own timestamps unless given
  double burstiness = 1.0;      // gamma shape of inter-arrival gaps (1 = Poisson)
  int64_t num_requests = -1;    // -1: the preset's default, or the whole trace

  // Speculation and scheduler limits (mode, K, max_num_seqs, ... live in `scheduler`).
  SchedulerConfig scheduler;
  std::string acceptance_preset;  // empty: the workload's
  std::string acceptance_curve;   // "p1,...,pK": overrides the preset's curve

  // Metadata implementations: checked each step (when `check`), and the one that times steps.
  std::string impl_list = "all";
  std::vector<Impl> impls;
  Impl time_impl = Impl::kFused;
  bool check = true;
  // Where each step's metadata runs: "cpu" (the emulated check above, modelled costs) or "gpu"
  // (sim/gpu_executor.cu: every step through the kernels on the device, timed and compared).
  std::string executor = "cpu";
  bool gpu_cold_l2 = true;  // executor gpu: flush L2 before every timed suite
  std::string calibration;  // time-model calibration JSON; empty: workloads/calibration.json
                            // when present, else the defaults

  // Output.
  std::string out_dir = "results/run";
  std::string step_log;            // per-step arrays as text (small runs)
  std::string dump_workload;       // write the built workload as JSONL here
  int64_t steps_csv_stride = 1;    // write every n-th step to steps.csv
  bool check_kv_each_step = false; // full KV consistency check after every step
  bool check_invariants = false;   // sim/invariants.h on every step (section "invariants")

  absl::Status Validate() const;
  nlohmann::json ToJson() const;
};

}  // namespace dspark::sim
