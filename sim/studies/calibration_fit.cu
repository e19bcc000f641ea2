#include "sim/studies/calibration_fit.cuh"

#include <algorithm>
#include <string>
#include <utility>

#include "sim/studies/metadata_bench.cuh"

namespace dspark::sim {

namespace {

bool DecodeLike(SeedCase c) {
  return c == SeedCase::kDecode || c == SeedCase::kVerify || c == SeedCase::kAdaptiveVerify ||
         c == SeedCase::kDraft || c == SeedCase::kAdaptiveDraft;
}

}  // namespace

nlohmann::ordered_json FitCalibration(const std::vector<CalibrationPoint>& points, const std::vector<Impl>& impls,
                                      const std::vector<SeedCase>& cases) {
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  for (Impl impl : impls) {
    nlohmann::ordered_json entry;
    nlohmann::ordered_json gpu = nlohmann::ordered_json::object();
    double sxy = 0, sxx = 0;
    for (SeedCase c : cases) {
      const CalibrationPoint* ref = nullptr;
      for (const CalibrationPoint& p : points)
        if (p.impl == impl && p.seed_case == c && p.batch == kCalibrationReferenceBatch) ref = &p;
      if (ref == nullptr) continue;
      gpu[BenchCaseName(c)] = ref->gpu_us;
      if (!DecodeLike(c)) continue;
      for (const CalibrationPoint& p : points) {
        if (p.impl != impl || p.seed_case != c || p.batch <= kCalibrationReferenceBatch ||
            p.num_tokens <= kCalibrationReferenceTokens)
          continue;
        const double x = p.num_tokens - kCalibrationReferenceTokens, y = p.gpu_us - ref->gpu_us;
        sxy += x * y;
        sxx += x * x;
      }
    }
    entry["gpu_us"] = gpu;
    if (sxx > 0) entry["gpu_us_per_token"] = std::max(0.0, sxy / sxx);
    entry["serializes_host"] = ReadsHostBoundaries(impl);
    metadata[std::string(ImplName(impl))] = std::move(entry);
  }
  return metadata;
}

}  // namespace dspark::sim
