#include "sim/exec/check_group.h"

#include <algorithm>
#include <new>
#include <utility>

#include "kernels/reference/token_map.h"

namespace dspark::sim {

namespace {

// f()'s result, or ResourceExhausted where it ran out of host memory past the pre-flight
// (CheckCpuCheckMemory): an error, not a crash.
template <typename T, typename F>
absl::StatusOr<T> OrOutOfMemory(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of host memory in the metadata check");
  }
}

}  // namespace

CheckGroup::CheckGroup(std::vector<Impl> impls, ModelConsts consts, bool dedup)
    : impls_(std::move(impls)), consts_(consts), dedup_(dedup), suite_(consts) {
  if (dedup_) suite_.EnableDedup(impls_);
}

absl::Status CheckGroup::Run(const BatchInputs& in, std::vector<absl::StatusOr<SuiteRunResult>>* results) {
  results->assign(impls_.size(), absl::UnknownError("not run"));
  if (impls_.empty()) return absl::OkStatus();
  // One suite for the group (each implementation its own buffers and backend) and one reference
  // per step, shared by every implementation: it is built from the device view and the layout.
  if (absl::Status s = suite_.Prepare(in.sizes); !s.ok()) return s;
  SuiteReference want;
  const auto make_reference = [&] {
    return OrOutOfMemory<bool>([&] {
      want = ComputeSuiteReference(in, suite_.layout(), consts_);
      return true;
    }).status();
  };
  if (!dedup_) {  // each implementation on its own: the reference first, then run and compare
    if (absl::Status s = make_reference(); !s.ok()) return s;
    for (size_t i = 0; i < impls_.size(); ++i)
      (*results)[i] = OrOutOfMemory<SuiteRunResult>([&] { return suite_.Run(impls_[i], in, &want); });
    return absl::OkStatus();
  }
  // Deduplicated: the memo needs the reference's token map before the first emulation; each
  // implementation is compared once every emulation is done (a sharer reads the builders its
  // leader ran, which are final then).
  token_map_ = ref::TokenToReq(in.device.query_start_loc, in.sizes.num_reqs, in.sizes.num_tokens);
  if (absl::Status s = suite_.BeginStep(in, token_map_); !s.ok()) return s;
  std::vector<absl::StatusOr<OpCounters>> counters;
  counters.reserve(impls_.size());
  for (Impl impl : impls_) counters.push_back(OrOutOfMemory<OpCounters>([&] { return suite_.Emulate(impl, in); }));
  if (absl::Status s = make_reference(); !s.ok()) return s;
  for (size_t i = 0; i < impls_.size(); ++i) {
    if (!counters[i].ok()) {
      (*results)[i] = counters[i].status();
      continue;
    }
    (*results)[i] = OrOutOfMemory<SuiteRunResult>(
        [&] { return SuiteRunResult{*counters[i], suite_.Compare(impls_[i], in, want)}; });
  }
  return absl::OkStatus();
}

std::vector<std::vector<Impl>> SplitIntoGroups(const std::vector<Impl>& impls, int32_t parts) {
  const size_t n = impls.size();
  const size_t k = std::min(n, static_cast<size_t>(std::max(parts, 1)));
  std::vector<std::vector<Impl>> groups;
  size_t at = 0;
  for (size_t g = 0; g < k; ++g) {
    const size_t size = n / k + (g < n % k ? 1 : 0);
    groups.emplace_back(impls.begin() + static_cast<std::ptrdiff_t>(at),
                        impls.begin() + static_cast<std::ptrdiff_t>(at + size));
    at += size;
  }
  if (groups.empty()) groups.emplace_back();
  return groups;
}

}  // namespace dspark::sim
