// The differential check of the layout fuzz: every registered implementation against the
// references, on layouts from tests/fuzz/layout_gen.h, with every difference classified as the
// tests and `bench` classify it today (docs/design.md s.6):
//   - bug: never allowed;
//   - stale-host: only for an implementation whose traits say it reads the host split, only when
//     the host split really is stale (a host seq_lens bound alone is read by no decode row:
//     docs/states.md s.4), and only in what vLLM builds from the host mapping (docs/design.md s.3,
//     "Where stale host state really breaks vLLM"): the token map, SWA, the compressor ring;
//   - padding residue: only for the old indexer chain (ImplTraits::old_indexer_chain), only in
//     bt_out_padding.
// An implementation that fails on a valid layout breaks the check too.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/suite/cases.h"
#include "kernels/suite/suite.h"

namespace dspark::fuzz {

// One line per broken rule for `impl`'s differences on `b`; empty when all are allowed.
std::vector<std::string> ClassificationViolations(Impl impl, const CaseBatch& b, const std::vector<FieldMismatch>& ms);

// What a run saw, so a test can tell that the allowed kinds were reached at all.
struct LayoutRunStats {
  int64_t steps = 0;
  int64_t runs = 0;                 // (step, implementation) pairs
  int64_t launches = 0;             // what those runs issued (OpCounters::Launches)
  int64_t host_syncs = 0;           // and how often they waited for the device
  std::array<int64_t, 3> cells{};   // differing cells by MismatchKind
  int64_t stale_split_steps = 0;    // steps whose host split was stale
  int64_t multi_segment_steps = 0;  // FP8 steps with a prefill query past one segment
  void Add(const LayoutRunStats& o);
};

// Counts a step and what its reference holds into `stats` (the CPU and GPU runners share it).
void CountStep(const CaseBatch& b, const ModelConsts& consts, LayoutRunStats& stats);

// Runs every registered implementation on `steps` in order, in CPU emulation, on one fresh
// CpuSuite (persistent buffers, as an engine's), and checks every cell. "" when clean;
// otherwise the violations, the failing step's layout and its differences.
std::string CheckStepsOnCpu(const std::vector<CaseBatch>& steps, const ModelConsts& consts,
                            LayoutRunStats* stats = nullptr);

// The report of a failing (step, implementation) cell; shared by the CPU and GPU runners.
std::string ViolationReport(Impl impl, size_t step, const CaseBatch& b, const std::vector<std::string>& violations,
                            const std::vector<FieldMismatch>& ms);

}  // namespace dspark::fuzz
