// Where the tests find their fixtures and the bundled traces: relative to the tree they run in, not
// the build-time paths, so a build folder carried to another machine (the GPU host: <repo
// copy>/build-gpu) passes as it is.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "sim/results/source_tree.h"

namespace dspark::testing_util {

// The source tree (sim::SourceTreeRoot: $DSPARK_SOURCE_ROOT, else the nearest folder above
// the test binary that holds sim/layers.cmake); empty when neither is found.
inline std::filesystem::path SourceRoot() { return dspark::sim::SourceTreeRoot(); }

// <root>/tests: golden logs, fixtures, fuzz corpus.
inline std::filesystem::path TestDir() { return SourceRoot() / "tests"; }

// The real traces: $DSPARK_DATA_DIR when set, else <root>/workloads/traces (shipped with the
// repository); empty when neither exists.
inline std::filesystem::path TraceDataDir() {
  if (const char* env = std::getenv("DSPARK_DATA_DIR"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  for (const std::filesystem::path& dir : {SourceRoot() / "workloads" / "traces"})
    if (!SourceRoot().empty() && std::filesystem::is_directory(dir, ec)) return dir;
  return {};
}

}  // namespace dspark::testing_util
