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
  return i;
})
