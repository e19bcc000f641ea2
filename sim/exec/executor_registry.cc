#include "sim/exec/executor_registry.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace dspark::sim {

namespace {

std::vector<ExecutorRegistration>& Registry() {
  static auto* registry = new std::vector<ExecutorRegistration>();
  return *registry;
}

}  // namespace

std::vector<ExecutorRegistration> RegisteredExecutors() {
  std::vector<ExecutorRegistration> sorted = Registry();
  std::sort(sorted.begin(), sorted.end(), [](const ExecutorRegistration& a, const ExecutorRegistration& b) {
    return std::tie(a.order, a.name) < std::tie(b.order, b.name);
  });
  return sorted;
}

bool HasExecutor(const std::string& name) {
  const std::vector<ExecutorRegistration>& r = Registry();
  return std::any_of(r.begin(), r.end(), [&](const ExecutorRegistration& e) { return e.name == name; });
}

RegisterExecutor::RegisterExecutor(std::string name, int order, ExecutorFactory factory) {
  Registry().push_back({std::move(name), order, std::move(factory)});
}

}  // namespace dspark::sim
