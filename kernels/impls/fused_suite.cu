// fused-suite: the project's own step beyond the seeds (DESIGN.md s.4): every output of the
// builder suite from one launch (kernels/suite/fused_suite.cuh), reading no host state.
#include "kernels/impls/register.h"

DSPARK_REGISTER_IMPL(fused_suite, ::dspark::RunFusedSuiteKernel, [] {
  ::dspark::ImplInfo i;
  i.name = "fused-suite";
  i.description = "the project's own: every output of the suite in one launch, no host reads";
  i.rank = 50;
  // Its kernel does not yet write the SWA prefill gather lengths or the indexer prefill chunks.
  i.traits.writes_prefill_metadata = false;
  return i;
})
