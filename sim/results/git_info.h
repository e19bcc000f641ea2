// The source tree's git revision, for the `meta` block of every result file.
#pragma once

#include <string>

namespace dspark::sim {

struct GitRevision {
  std::string sha = "unknown";  // 40 hex digits, or "unknown" (no git, no repository, no commit)
  bool known = false;
  bool dirty = false;           // tracked files differ from HEAD (meaningful only when known)
};

// Asks git about SourceTreeRoot() (sim/results/source_tree.h). Anything but a full SHA from `git rev-parse HEAD` (a
// missing git, a copy of the tree without history) gives sha "unknown", never a made-up value.
GitRevision ReadGitRevision();

}  // namespace dspark::sim
