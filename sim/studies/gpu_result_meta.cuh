// The meta block of the GPU commands' result files (bench.json, the calibration file): the
// command, its schema, argv, the device and driver, and the source tree's git revision.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dspark::sim {

// The meta block every result file carries: tool, schema, argv, GPU, driver, clocks (peak, from
// the device attributes; current clocks need NVML and are "unknown"), git SHA and dirty flag,
// date.
nlohmann::ordered_json ResultMeta(const std::string& tool, const std::string& schema, int schema_version,
                                  const std::vector<std::string>& argv, int device);

}  // namespace dspark::sim
