// Every fuzz target by its corpus folder (tests/fuzz/fuzz_targets.h); the targets themselves are
// in trace_targets.cc, acceptance_targets.cc, option_targets.cc and layout_check.cc.
#include "tests/fuzz/fuzz_targets.h"

namespace dspark::fuzz {

const std::vector<FuzzTarget>& AllFuzzTargets() {
  static const auto* targets = new std::vector<FuzzTarget>{
      {"trace_auto", FuzzTraceAuto},
      {"trace_azure", FuzzTraceAzure},
      {"trace_vidur", FuzzTraceVidur},
      {"trace_burstgpt", FuzzTraceBurstGpt},
      {"trace_mooncake", FuzzTraceMooncake},
      {"trace_jsonl", FuzzTraceJsonl},
      {"acceptance_profile", FuzzAcceptanceProfile},
      {"acceptance_curve", FuzzAcceptanceCurve},
      {"run_config", FuzzRunConfig},
      {"sweep_config", FuzzSweepConfig},
      {"batch_layout", FuzzBatchLayout},
  };
  return *targets;
}

}  // namespace dspark::fuzz
