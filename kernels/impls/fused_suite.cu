// fused-suite: the project's own step beyond the seeds (docs/design.md s.4): every output of the
// builder suite from one launch (kernels/suite/fused_suite.cuh), reading no host state.
#include "kernels/impls/register.h"

DSPARK_REGISTER_IMPL(fused_suite, ::dspark::RunFusedSuiteKernel, [] {
  ::dspark::ImplInfo i;
  i.name = "fused-suite";
  i.description = "the project's own: every output of the suite in one launch, no host reads";
  i.rank = 50;
  i.role = ::dspark::ImplRole::kOwn;
  i.style = {"#009E73", "..", "^"};
  // An estimate: a quarter of (d) (the target is <= 2x the ~3 us graph floor at decode batch 16).
  i.default_cost.declared = true;
  i.default_cost.derived_from = "vllm-0.31";
  i.default_cost.gpu_scale = 0.25;
  i.default_cost.gpu_us_per_token = 0.002;
  i.default_cost.host_us = 4.0;
  i.default_cost.launches = {1, 1, 1, 1, 1, 1, 1, 1};
  return i;
})
