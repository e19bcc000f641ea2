// Executors are the stage of a step that does its main work: they run the step's metadata
// through implementations (the CPU emulation, the GPU) and may fail it. The engine builds each
// step's arrays once, runs the executors in the order they were added, then shows the step to
// the observers (which only listen), then commits it. A step an executor fails is never shown
// to the observers, so the metrics of an aborted run hold exactly the completed steps.
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "sim/engine/check_tally.h"
#include "sim/model/step_plan.h"

namespace dspark::sim {

// An executor's own typed figures beyond its check tally (the GPU executor's timing, graphs and
// top-B counts): a reader that knows the executor casts to its type (bench reads the GPU's).
struct ExecutorFigures {
  virtual ~ExecutorFigures() = default;
};

class StepExecutor {
 public:
  virtual ~StepExecutor() = default;
  // Key of this executor's section in summary.json.
  virtual absl::string_view name() const = 0;
  // Once per step, after it was planned and timed; `arrays` are the step's arrays, built once
  // by the engine for every executor. A non-OK status stops the run with that error.
  virtual absl::Status Execute(const StepPlan& plan, const StepArrays& arrays) = 0;
  // End of the run: fill this executor's section of summary.json. Non-OK fails the run.
  virtual absl::Status Finish(nlohmann::json* /*section*/) { return absl::OkStatus(); }
  // After the run: what its metadata check counted (nullptr: it checks nothing), and its own
  // figures (nullptr: none). The run's result (sim/studies/run.h) carries both.
  virtual const CheckTally* check_tally() const { return nullptr; }
  // CPU time of the processes the executor runs beside the run's own (the check's second
  // process, sim/exec/check_process.h), which the run adds to its own CPU time.
  virtual double other_processes_cpu_s() const { return 0; }
  virtual std::shared_ptr<const ExecutorFigures> figures() const { return nullptr; }
};

}  // namespace dspark::sim
