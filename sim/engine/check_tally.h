// What an executor's metadata check counted (docs/design.md s.6), one struct for every executor
// (the CPU emulation's and the GPU's): per implementation, the steps and what the suites issued,
// and the differences against the reference by kind (stale-host divergence, padding residue,
// bug), builder, field and step case, never folded together. The executors fill it; the result
// files' writers render it (docs/results-schema.md); sweep rows and bench read it as it is.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/backend.h"
#include "kernels/suite/suite.h"
#include "sim/model/step_plan.h"

namespace dspark::sim {

inline constexpr int kNumMismatchKinds = 3;  // by MismatchKind
// "stale_host", "padding_residue", "bug": the keys of the kinds in every result file.
inline constexpr const char* kMismatchKindKeys[kNumMismatchKinds] = {"stale_host", "padding_residue", "bug"};

using KindCounts = std::array<int64_t, kNumMismatchKinds>;

struct ImplTally {
  int64_t steps = 0;             // steps checked
  OpCounters counters;           // what the suites issued, summed over steps
  KindCounts steps_with{};       // steps with at least one differing field of each kind
  KindCounts cells{};            // differing elements, summed over fields and steps
  std::map<std::string, KindCounts> cells_by_builder;  // by builder
  std::map<std::string, KindCounts> cells_by_field;    // by "builder.field"
  std::array<int64_t, kNumStepCases> steps_by_case{};
  std::array<int64_t, kNumStepCases> launches_by_case{};
  std::array<KindCounts, kNumStepCases> steps_with_by_case{};
  int64_t launches_in_graphs = 0;  // launches of the steps replayed from a recorded graph (vllm-0.34)

  // One step of case `c` whose suite issued `counters`.
  void CountStep(StepCase c, const OpCounters& step_counters);
  // One differing field of a step of case `c`; `*step_has` collects the step's kinds, which
  // CountKinds adds once the step's fields are all counted.
  void CountMismatch(const FieldMismatch& m, KindCounts* step_has);
  void CountKinds(StepCase c, const KindCounts& step_has);
  // `other` added (tallies of parts of one run).
  void Add(const ImplTally& other);
};

// The tallies of the implementations an executor checked, in the order it checked them.
struct CheckTally {
  std::vector<std::pair<Impl, ImplTally>> impls;

  ImplTally& Of(Impl impl);                  // added when absent
  const ImplTally* Find(Impl impl) const;    // nullptr when absent
  bool empty() const { return impls.empty(); }
};

}  // namespace dspark::sim
