#include "sim/results/git_info.h"

#include <cstdio>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "sim/results/source_tree.h"

namespace dspark::sim {
namespace {

std::string RunGit(const std::string& args) {
  const std::string root = SourceTreeRoot();
  if (root.empty()) return "";
  const std::string cmd = absl::StrCat("git -C '", root, "' ", args, " 2>/dev/null");
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof(buf), pipe.get()) != nullptr) out += buf;
  return std::string(absl::StripAsciiWhitespace(out));
}

bool IsFullSha(const std::string& s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

GitRevision ReadGitRevision() {
  GitRevision rev;
  const std::string sha = RunGit("rev-parse HEAD");
  if (!IsFullSha(sha)) return rev;
  rev.sha = sha;
  rev.known = true;
  rev.dirty = !RunGit("status --porcelain --untracked-files=no").empty();
  return rev;
}

}  // namespace dspark::sim
