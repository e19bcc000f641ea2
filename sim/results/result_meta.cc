#include "sim/results/result_meta.h"

#include "kernels/suite/impl_registry.h"
#include "sim/results/git_info.h"

namespace dspark::sim {

nlohmann::ordered_json ResultMeta(const ResultMetaSpec& spec) {
  nlohmann::ordered_json meta;
  meta["tool"] = spec.tool;
  if (!spec.schema.empty()) meta["schema"] = spec.schema;
  meta["schema_version"] = spec.schema_version;
  meta["argv"] = spec.argv;
  if (spec.seed.has_value()) meta["seed"] = *spec.seed;
  const GitRevision rev = ReadGitRevision();
  meta["git_sha"] = rev.known ? rev.sha : std::string("unknown");
  meta["git_dirty"] = rev.known ? nlohmann::ordered_json(rev.dirty) : nlohmann::ordered_json(nullptr);
  meta["impls"] = ImplRegistryJson();
  return meta;
}

nlohmann::ordered_json ImplRegistryJson() {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (Impl impl : AllImpls()) {
    const ImplInfo& info = impl.info();
    auto text_or_null = [](const std::string& s) {
      return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
    };
    out.push_back({{"name", info.name},
                   {"aliases", info.aliases},
                   {"description", info.description},
                   {"vllm_state", text_or_null(info.vllm_state)},
                   {"vllm_release", text_or_null(info.vllm_release)},
                   {"role", std::string(ImplRoleName(info.role))},
                   {"order", impl.index()},
                   {"color", info.style.color},
                   {"hatch", info.style.hatch.value_or("")},
                   {"marker", info.style.marker}});
  }
  return out;
}

}  // namespace dspark::sim
