// Where the tests find their fixtures and the shared data: relative to the tree they run in, not
// the build-time paths, so a build folder carried to another machine (the GPU host: <repo
// copy>/build-gpu, traces in <repo copy>/.gpu-data) passes as it is.
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

// The real traces (never committed): $DSPARK_DATA_DIR when set, else <root>/../shared/data, else
// <root>/.gpu-data (scripts/gpu-build.sh copies them there); empty when none of them exists.
inline std::filesystem::path SharedDataDir() {
  if (const char* env = std::getenv("DSPARK_DATA_DIR"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  for (const std::filesystem::path& dir : {SourceRoot() / ".." / "shared" / "data", SourceRoot() / ".gpu-data"})
    if (!SourceRoot().empty() && std::filesystem::is_directory(dir, ec)) return dir;
  return {};
}

}  // namespace dspark::testing_util
