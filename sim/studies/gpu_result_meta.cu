#include "sim/studies/gpu_result_meta.cuh"

#include "sim/exec/gpu_executor.cuh"
#include "sim/results/result_meta.h"

namespace dspark::sim {

nlohmann::ordered_json ResultMeta(const std::string& tool, const std::string& schema, int schema_version,
                                  const std::vector<std::string>& argv, int device) {
  nlohmann::ordered_json meta = ResultMeta({tool, schema, schema_version, argv, std::nullopt});
  // Named: a range-for over GpuMetaJson(device).items() would iterate a destroyed temporary.
  const nlohmann::ordered_json gpu = GpuMetaJson(device);
  for (const auto& [key, value] : gpu.items()) meta[key] = value;
  return meta;
}

}  // namespace dspark::sim
