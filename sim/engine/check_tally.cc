#include "sim/engine/check_tally.h"

namespace dspark::sim {

void ImplTally::CountStep(StepCase c, const OpCounters& step_counters) {
  ++steps;
  counters += step_counters;
  ++steps_by_case[static_cast<int>(c)];
  launches_by_case[static_cast<int>(c)] += step_counters.Launches();
  if (step_counters.graph_launches > 0) launches_in_graphs += step_counters.Launches();
}

void ImplTally::CountMismatch(const FieldMismatch& m, KindCounts* step_has) {
  const int k = static_cast<int>(m.kind);
  (*step_has)[k] = 1;
  cells[k] += m.count;
  cells_by_builder[m.builder][k] += m.count;
  cells_by_field[m.builder + "." + m.field][k] += m.count;
}

void ImplTally::CountKinds(StepCase c, const KindCounts& step_has) {
  for (int k = 0; k < kNumMismatchKinds; ++k) {
    if (!step_has[k]) continue;
    ++steps_with[k];
    ++steps_with_by_case[static_cast<int>(c)][k];
  }
}

void ImplTally::Add(const ImplTally& o) {
  steps += o.steps;
  counters += o.counters;
  launches_in_graphs += o.launches_in_graphs;
  for (int k = 0; k < kNumMismatchKinds; ++k) {
    steps_with[k] += o.steps_with[k];
    cells[k] += o.cells[k];
  }
  for (const auto& [b, v] : o.cells_by_builder)
    for (int k = 0; k < kNumMismatchKinds; ++k) cells_by_builder[b][k] += v[k];
  for (const auto& [f, v] : o.cells_by_field)
    for (int k = 0; k < kNumMismatchKinds; ++k) cells_by_field[f][k] += v[k];
  for (int c = 0; c < kNumStepCases; ++c) {
    steps_by_case[c] += o.steps_by_case[c];
    launches_by_case[c] += o.launches_by_case[c];
    for (int k = 0; k < kNumMismatchKinds; ++k) steps_with_by_case[c][k] += o.steps_with_by_case[c][k];
  }
}

ImplTally& CheckTally::Of(Impl impl) {
  for (auto& [i, t] : impls)
    if (i == impl) return t;
  impls.emplace_back(impl, ImplTally{});
  return impls.back().second;
}

const ImplTally* CheckTally::Find(Impl impl) const {
  for (const auto& [i, t] : impls)
    if (i == impl) return &t;
  return nullptr;
}

}  // namespace dspark::sim
