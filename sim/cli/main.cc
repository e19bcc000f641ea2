// dspark-sim: one executable, subcommands registered in sim/cmd_*.cc.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "sim/cli/cli_registry.h"
#include "sim/options/option_text.h"
#include "sim/results/git_info.h"

#ifndef DSPARK_VERSION
#define DSPARK_VERSION "unknown"
#endif
#include "sim/results/source_tree.h"

namespace {

void PrintUsage() {
  std::printf("usage: dspark-sim <command> [options]   (dspark-sim <command> --help)\n"
              "       dspark-sim --version\n\ncommands:\n");
  for (const auto& [name, info] : dspark::cli::Registry())
    std::printf("  %-10s %s\n", name.c_str(), info.summary.c_str());
  std::printf("\nenvironment:\n  %s   the source tree, where the bundled calibration and the git revision are read\n"
              "                       (default: the nearest folder above the binary that holds sim/layers.cmake)\n",
              dspark::sim::kSourceRootEnv);
}

// "dspark-sim 0.1.0 (git <sha>[, dirty]; CUDA kernels: yes|no)": the version, the source revision
// as the result files' meta records it, and whether this build can run the GPU commands.
void PrintVersion() {
  const dspark::sim::GitRevision rev = dspark::sim::ReadGitRevision();
#if defined(DSPARK_HAVE_CUDA)
  const char* cuda = "yes";
#else
  const char* cuda = "no (CPU-only build)";
#endif
  std::printf("dspark-sim %s (git %s%s; CUDA kernels: %s)\n", DSPARK_VERSION, rev.sha.c_str(),
              rev.known && rev.dirty ? ", dirty" : "", cuda);
}

// The options that set how much memory a command takes, for an allocation that fails.
const char* MemoryHint(const char* command) {
  const std::string c = command;
  if (c == "run")
    return "its memory grows with --num-requests (or the trace's rows), --max-num-batched-tokens, --max-model-len "
           "and --max-num-seqs, and the implementations checked (--impl; --no-check checks none); lower them";
  if (c == "sweep")
    return "each point is a run: lower --num-requests, --batch-size or --concurrency, check fewer implementations "
           "(--impl), or pass a smaller run option through";
  if (c == "step") return "its memory grows with the step's capacity, bt_stride and rows; lower them, or --impl fewer";
  if (c == "verify") return "its memory grows with --batch and the implementations (--impl); lower them";
  if (c == "soak") return "its memory grows with --batch-requests and --max-num-batched-tokens; lower them";
  return "lower the sizes its options give";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "-V"))) {
    PrintVersion();
    return 0;
  }
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    PrintUsage();
    return argc < 2 ? 2 : 0;
  }
  auto& registry = dspark::cli::Registry();
  auto it = registry.find(argv[1]);
  if (it == registry.end()) {
    std::fprintf(stderr, "dspark-sim: unknown command '%s'\n\n", argv[1]);
    PrintUsage();
    return 2;
  }
  // Boost.Program_options 1.74 loops forever formatting an error about an option that holds one
  // of its message placeholders (%value%, ...): every command's arguments are checked first.
  if (const absl::Status s = dspark::sim::CheckOptionArgs(argc - 1, argv + 1); !s.ok()) {
    std::fprintf(stderr, "dspark-sim %s: %s\n", argv[1], std::string(s.message()).c_str());
    return 2;
  }
  try {
    return it->second.fn(argc - 1, argv + 1);
  } catch (const std::bad_alloc&) {
    // Every command bounds what it allocates before it starts where it can (run's metadata
    // check, step's pre-flight); this is what is left: the machine's memory, or a ulimit, ran
    // out underneath. Name the sizes that drive the command's memory.
    std::fprintf(stderr, "dspark-sim %s: out of host memory (an allocation failed); %s\n", argv[1],
                 MemoryHint(argv[1]));
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dspark-sim %s: error: %s\n", argv[1], e.what());
    return 1;
  }
}
