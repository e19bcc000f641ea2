#include "sim/studies/gpu_result_meta.cuh"

#include <cuda_runtime.h>

#include "absl/strings/str_format.h"
#include "sim/exec/gpu_timing.cuh"
#include "sim/results/git_info.h"

namespace dspark::sim {

namespace {

std::string ClockMhz(cudaDeviceAttr attr, int device) {
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, attr, device) != cudaSuccess || khz <= 0) {
    (void)cudaGetLastError();
    return "unknown";
  }
  return absl::StrFormat("%d", khz / 1000);
}

}  // namespace

nlohmann::ordered_json ResultMeta(const std::string& tool, const std::string& schema, int schema_version,
                                  const std::vector<std::string>& argv, int device) {
  const timing::GpuMeta m = timing::ReadGpuMeta(device);
  const GitRevision rev = ReadGitRevision();
  nlohmann::ordered_json meta;
  meta["tool"] = tool;
  meta["schema"] = schema;
  meta["schema_version"] = schema_version;
  meta["argv"] = argv;
  meta["gpu"] = m.device_name;  // (one name key: the plots' titles join "device" and "gpu")
  meta["device_ordinal"] = device;
  meta["compute_capability"] = absl::StrFormat("%d.%d", m.cc_major, m.cc_minor);
  meta["sm_count"] = m.sm_count;
  meta["l2_bytes"] = m.l2_bytes;
  meta["driver"] = m.driver_version;
  meta["cuda_driver_api"] = m.cuda_driver_api;
  meta["cuda_runtime"] = m.cuda_runtime;
  meta["clocks"] = {{"sm_peak_mhz", ClockMhz(cudaDevAttrClockRate, device)},
                    {"memory_peak_mhz", ClockMhz(cudaDevAttrMemoryClockRate, device)},
                    {"current", "unknown (needs NVML; not read)"},
                    {"locked", "unknown"}};
  meta["git_sha"] = rev.sha;
  meta["git_dirty"] = rev.known ? nlohmann::ordered_json(rev.dirty) : nlohmann::ordered_json(nullptr);
  meta["date_utc"] = m.date_utc;
  return meta;
}

}  // namespace dspark::sim
