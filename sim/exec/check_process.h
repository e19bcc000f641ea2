// A group of the metadata check run by a second process, in step with the run (run --jobs).
//
// A checked step takes tens of microseconds, split over a handful of implementations. Threads of
// one process would share its page tables, and the check's clean pages
// (kernels/common/clean_pages.h) change page protections every step: each mprotect then stops
// the other core to flush its TLB, which cost more than the second core gave. A forked process
// has page tables of its own, so each process keeps its clean pages to itself.
//
// Each step the run copies the step's arrays into memory shared with the process, which runs
// its CheckGroup on them while the run checks its own group, and hands its results back through
// the same memory. The run waits for them before the step is shown to the observers, so a step
// is complete, or failed, exactly as with one process. Both sides poll briefly, then sleep on a
// futex. The process ignores SIGINT and SIGTERM (the run stops it), ends with the run (a parent
// death signal), never writes a file or the console, and leaves with _exit (the run's buffered
// outputs are not its to flush).
//
// Linux only; where it cannot start (another OS, a process that already runs threads, fork
// failing) Start says why and the executor checks every group itself.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/suite/suite.h"
#include "sim/model/step_plan.h"

namespace dspark::sim {

class CheckProcess {
 public:
  // Forks a process that checks `impls` (a CheckGroup of them) step by step.
  static absl::StatusOr<std::unique_ptr<CheckProcess>> Start(std::vector<Impl> impls, ModelConsts consts,
                                                             bool dedup);
  ~CheckProcess();  // tells the process to leave and reaps it
  CheckProcess(const CheckProcess&) = delete;
  CheckProcess& operator=(const CheckProcess&) = delete;

  const std::vector<Impl>& impls() const { return impls_; }
  pid_t pid() const { return pid_; }
  // The process's CPU time up to its last answered step.
  double cpu_s() const;

  // Hands the step to the process: its inputs (ToBatchInputs) and the arrays they point into.
  // Then Collect, once, before the next Submit.
  absl::Status Submit(const BatchInputs& in, const StepArrays& arrays);
  // Waits for the step's results: one per implementation, in impls() order. A non-OK return is
  // the step's own failure in the process, or the process's end.
  absl::Status Collect(std::vector<absl::StatusOr<SuiteRunResult>>* results);

  // What --jobs 0 (the default) asks for: two processes where this process may run on two cores
  // or more and one of them is idle (the fewest other runnable tasks over five samples of
  // /proc/stat's procs_running, 2 ms apart, leaves a core free), else one. The two answer each other every step, so on a machine whose cores are
  // all busy each step waits for the scheduler to run the other (a default run took 1.2 s instead
  // of 0.2 s beside a test run on 2 cores). More than two pay little: each process computes the
  // reference, and a group of one state shares no builder (on the H200 machine's 16 cores the
  // Splitwise replay took 51.8 s with 2, 48.8 s with 6 at five times the CPU; docs/performance.md).
  static int32_t DefaultJobs();

  struct Shared;  // the memory both processes map (check_process.cc)

 private:
  CheckProcess(std::vector<Impl> impls, Shared* shared, pid_t pid);
  absl::Status Ended(const char* while_doing);

  std::vector<Impl> impls_;
  Shared* shared_;
  pid_t pid_;
  bool exited_ = false;
};

}  // namespace dspark::sim
