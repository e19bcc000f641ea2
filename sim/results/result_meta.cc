#include "sim/results/result_meta.h"

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
  return meta;
}

}  // namespace dspark::sim
