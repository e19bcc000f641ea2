// `run --what-if record-av-graphs`: a labelled what-if that no vLLM release runs. vLLM 0.33.0+
// records the metadata build of FULL uniform-decode steps in CUDA graphs keyed by (num_reqs,
// num_reqs_after_padding, num_tokens, num_tokens_after_padding) and excludes adaptive
// verification (AV) steps, "because the host query lengths are only bounds"
// (kernels/suite/metadata_graph.h). This executor asks what would break if AV steps were
// recorded and replayed under the same key: every host value a build reads at recording time is
// frozen into every replay of that key.
//
// On each AV step that has a key, every selected implementation's build is emulated with the
// RECORDING's host view (qsl_cpu, and with it the host totals and decode_lens_cpu max / min;
// seq_lens_cpu bound) and the CURRENT step's device view, and compared exactly with the reference
// of the current device view; the indexer's host values (write_max_decode_len,
// decode_is_uniform) are compared too. The recording is vLLM's: the capture batch
// (InputBatch.make_dummy: tokens spread evenly, seq_lens at max_model_len), with `record-av-graphs`;
// the first AV step of each key with `record-av-graphs-at-first-step` (which then replays
// exactly). Reported per implementation, builder, field and step kind, in summary.json's section
// what_if_record_av_graphs. Also, as released (eager, no what-if), the indexer's host values of
// every AV step against the device split: the stale decode_lens_cpu max / min of 0.28.0-0.33.0.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/suite/metadata_graph.h"
#include "kernels/suite/suite.h"
#include "nlohmann/json.hpp"
#include "sim/engine/step_executor.h"
#include "sim/model/step_plan.h"

namespace dspark::sim {

inline constexpr int kWhatIfExecutorOrder = 25;  // after the CPU check

class RecordAvGraphsWhatIf : public StepExecutor {
 public:
  // at_first_step: record from the first AV step of each key (else from vLLM's capture batch);
  // max_model_len: the capture batch's host seq_lens bound; spec_k: K (next_n = 1 + K).
  RecordAvGraphsWhatIf(std::vector<Impl> impls, ModelConsts consts, bool at_first_step, int32_t max_model_len,
                       int32_t spec_k);

  absl::string_view name() const override { return "what_if_record_av_graphs"; }
  absl::Status Execute(const StepPlan& plan, const StepArrays& arrays) override;
  absl::Status Finish(nlohmann::json* section) override;

  // Counts of one implementation (public for tests).
  struct FieldCounts {
    int64_t steps = 0;  // steps with a difference
    int64_t cells = 0;  // differing elements
  };
  struct HostFieldCounts {
    int64_t differs = 0;  // steps whose value differs from the device split's
    int64_t unsafe = 0;   // steps whose value misdescribes the device split (IndexerHostFieldsSafe)
  };
  struct ImplCounts {
    int64_t replayed = 0;                              // AV steps replayed with a frozen host view
    int64_t broken_steps = 0;                          // of those, with any output differing
    std::map<std::string, FieldCounts> by_field;       // "builder.field" -> counts
    std::map<std::string, std::map<std::string, int64_t>> steps_by_case;  // field -> case -> steps
    int64_t eager_broken_steps = 0;                    // the same steps built eagerly (as released)
    std::map<std::string, FieldCounts> eager_by_field;
    HostFieldCounts frozen_max, frozen_uniform;        // the replays' host values
    HostFieldCounts released_max, released_uniform;    // as released, eager, every AV step
    int64_t released_steps = 0;                        // AV steps whose indexer read them
  };
  const std::map<Impl, ImplCounts>& counts() const { return counts_; }

 private:
  std::vector<Impl> impls_;
  ModelConsts consts_;
  bool at_first_step_;
  int32_t max_model_len_;
  int32_t spec_k_;
  CpuSuite suite_;
  int64_t av_steps_ = 0, keyed_steps_ = 0;
  std::map<VllmMetadataGraphKey, RecordedHostView> recorded_;
  std::map<Impl, ImplCounts> counts_;
};

}  // namespace dspark::sim
