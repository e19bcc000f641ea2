// Scratch folders for tests, one set per test process (ctest runs tests in parallel processes),
// removed when the process exits; and reading a file whole.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dspark::testing_util {

// `<gtest temp dir>/<prefix>_<pid>_<name>`, emptied; made when `create` is set.
inline std::string ProcessTempDir(const std::string& prefix, const std::string& name, bool create) {
  struct Folders {
    std::vector<std::filesystem::path> paths;
    ~Folders() {
      std::error_code ec;
      for (const auto& p : paths) std::filesystem::remove_all(p, ec);
    }
  };
  static Folders folders;
  const std::filesystem::path p =
      std::filesystem::path(::testing::TempDir()) / absl::StrCat(prefix, "_", getpid(), "_", name);
  std::filesystem::remove_all(p);
  if (create) std::filesystem::create_directories(p);
  folders.paths.push_back(p);
  return p.string();
}

// The bytes of `p`, as written; "" when it cannot be opened.
inline std::string SlurpFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `text` to `path` as bytes, creating its parent folders.
inline void WriteTextFile(const std::filesystem::path& path, const std::string& text) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace dspark::testing_util
