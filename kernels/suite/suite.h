// The builder suite of one step, in every implementation of the `impl` axis (DESIGN.md s.4),
// and the exact check of its outputs against the CPU reference built from device truth.
//
// This is the interface the simulator and the executors program against. Implementations are
// templates over a Backend (kernels/common/backend.h), instantiated for the CPU emulator here
// and for the GPU in kernels/suite/*.cu.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/batch.h"
#include "kernels/common/backend.h"

namespace dspark {

enum class Impl { kChain, kCached, kDeviceChain, kFused, kFusedSuite };
inline constexpr Impl kAllImpls[] = {Impl::kChain, Impl::kCached, Impl::kDeviceChain, Impl::kFused,
                                     Impl::kFusedSuite};

std::string_view ImplName(Impl impl);
absl::StatusOr<Impl> ParseImpl(std::string_view name);
// Parses a comma-separated list; "all" means every implementation.
absl::StatusOr<std::vector<Impl>> ParseImplList(std::string_view list);
// chain and cached read host query boundaries (and so go wrong when those are stale).
bool ReadsHostBoundaries(Impl impl);
// Whether the implementation can run inside a CUDA graph (no host reads between launches).
bool GraphCapturable(Impl impl);

// What a difference against the reference is (DESIGN.md s.6); never folded into each other.
enum class MismatchKind {
  kStaleHost,       // a host-boundary implementation read stale host state
  kPaddingResidue,  // chain indexer: padding block-table rows keep earlier data past column 0
  kBug,             // anything else, and any mismatch of fused / fused-suite / device-chain
};
std::string_view MismatchKindName(MismatchKind kind);

struct FieldMismatch {
  std::string builder;   // e.g. "swa", "indexer_r1"
  std::string field;     // e.g. "swa_indices"
  int64_t index = 0;     // first differing flat index in the field
  int64_t expected = 0;
  int64_t actual = 0;
  int64_t count = 0;     // differing elements in the field
  MismatchKind kind = MismatchKind::kBug;
};

struct SuiteRunResult {
  OpCounters counters;                    // launches, copies, syncs this suite issued
  std::vector<FieldMismatch> mismatches;  // one entry per differing field
};

// Runs one implementation's suite on the CPU emulator and compares every output field exactly
// with the reference computed from the device view. Owns persistent output buffers sized by
// the first capacity it sees and reused (like an engine's) across steps; buffers are poisoned
// before first use so unwritten cells show up.
class CpuSuite {
 public:
  explicit CpuSuite(const ModelConsts& consts = {});
  ~CpuSuite();
  CpuSuite(const CpuSuite&) = delete;
  CpuSuite& operator=(const CpuSuite&) = delete;

  absl::StatusOr<SuiteRunResult> Run(Impl impl, const BatchInputs& in);

 private:
  struct State;
  State* state_;
};

}  // namespace dspark
