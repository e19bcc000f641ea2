#include "sim/cli/cli_registry.h"

namespace dspark::cli {

std::map<std::string, CommandInfo>& Registry() {
  static auto* registry = new std::map<std::string, CommandInfo>();
  return *registry;
}

}  // namespace dspark::cli
