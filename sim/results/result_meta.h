// The `meta` block every result file opens with, built in one place: which tool wrote the file,
// its schema, the command line, the seed of a seeded run, the source revision, and the
// implementation registry (names, aliases, vLLM state, role, order and style), from which the
// plots take every implementation's place, colour and baseline. GPU commands
// add their device (sim/studies/gpu_result_meta.cuh); a writer may add keys of its own after
// these (a sweep's creation time, a step dump's schema).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dspark::sim {

struct ResultMetaSpec {
  std::string tool;                 // "dspark-sim run", "dspark-sim sweep --merge", ...
  std::string schema;               // the file's schema name; "" for none
  int schema_version = 0;
  std::vector<std::string> argv;    // the command line as given
  std::optional<uint64_t> seed;     // the run's --seed, when it has one
};

// {tool, schema (when named), schema_version, argv, seed (when given), git_sha, git_dirty,
// impls}: git_sha is "unknown" and git_dirty null when the tree's revision cannot be read
// (sim/results/git_info.h); impls is ImplRegistryJson().
nlohmann::ordered_json ResultMeta(const ResultMetaSpec& spec);

// Every registered implementation in the registry's order (kernels/suite/impl_registry.h):
// [{name, aliases, description, vllm_state, vllm_release, role, order, color, hatch, marker}],
// order counting from 0. vllm_state and vllm_release are null for an implementation that
// claims no vLLM state.
nlohmann::ordered_json ImplRegistryJson();

}  // namespace dspark::sim
