// Observer that records every adaptive verification step of a run (`run --dump-av FILE`) as
// JSON lines, for scripts/oracle/check_av.py to run vLLM's own adaptive verification functions
// on the recorded inputs and compare their outputs with the simulator's:
//   line 1: {"kind": "header", ...} the run's constants: av_release, spec_k, vocab_size,
//           max_total_logits, num_bonus_tokens, max_num_reqs, max_num_batched_tokens,
//           cudagraph_limit, adaptive_mode, the cost curves and the tables built from them;
//   then one {"kind": "step", ...} per adaptive verification step (a target step with drafts
//           scheduled) among the run's first `max_steps` steps (0: all): the rows in batch
//           order with their scheduled tokens, drafts, computed tokens, prefill length, stale
//           (host) and fresh (device) confidences, and the simulator's budget, host token
//           counts, device draft counts, device qsl (padded rows included) and cu_num_logits.
// Confidences are float32 values written exactly (as float64 numbers). Materialises the
// arrays of the steps it records.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "sim/engine/step_observer.h"
#include "sim/model/scheduler.h"

namespace dspark::sim {

class AvDumpObserver final : public StepObserver {
 public:
  explicit AvDumpObserver(int64_t max_steps) : max_steps_(max_steps) {}
  absl::string_view name() const override { return "av_dump"; }
  void OnStart(const Engine& engine) override;
  absl::Status OnStep(const StepPlan& plan) override;
  const std::string& text() const { return text_; }

 private:
  int64_t max_steps_;
  const Scheduler* scheduler_ = nullptr;
  AvStepRecord record_;
  std::string text_;
};

}  // namespace dspark::sim
