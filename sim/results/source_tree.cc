#include "sim/results/source_tree.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;

bool IsSourceTree(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "sim" / "layers.cmake", ec);
}

std::string FindSourceTreeRoot() {
  if (const char* env = std::getenv(kSourceRootEnv); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path dir = self.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      if (IsSourceTree(dir)) return dir.string();
      if (dir == dir.root_path()) break;
    }
#ifdef DSPARK_SOURCE_DIR
  if (IsSourceTree(DSPARK_SOURCE_DIR)) return DSPARK_SOURCE_DIR;
#endif
  return "";
}

}  // namespace

std::string SourceTreeRoot() { return FindSourceTreeRoot(); }

std::string BundledCalibrationPath() {
  const std::string root = SourceTreeRoot();
  if (root.empty()) return "";
  const fs::path path = fs::path(root) / "workloads" / "calibration_h200.json";
  std::error_code ec;
  return fs::exists(path, ec) ? path.string() : "";
}

}  // namespace dspark::sim
