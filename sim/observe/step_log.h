// Observer that writes every step's plan and arrays as text: the golden step logs of
// tests/golden/ and `run --step-log FILE`. Materialises the arrays, so it is for small runs.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "sim/engine/step_observer.h"

namespace dspark::sim {

class StepLogObserver final : public StepObserver {
 public:
  absl::string_view name() const override { return "step_log"; }
  absl::Status OnStep(const StepPlan& plan) override;
  // Preemptions happen while a step is planned, so they are logged before that step's line.
  void OnPreempted(int32_t req, double time_s) override;
  void OnFinished(int32_t req, double time_s) override;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace dspark::sim
