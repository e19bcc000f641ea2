// The metadata costs of the CPU time model's calibration file, fitted from what `calibrate`
// measured on the GPU (sim/studies/metadata_bench.cuh): per implementation, one time per step case
// at the reference batch and a per-token slope above the reference tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/suite/cases.h"
#include "kernels/suite/impl_registry.h"
#include "nlohmann/json.hpp"

namespace dspark::sim {

// One measured point of `calibrate`.
struct CalibrationPoint {
  Impl impl = Impl::kFused;
  SeedCase seed_case = SeedCase::kDecode;
  int32_t batch = 0;         // [requests]
  int32_t num_tokens = 0;    // N [tokens] (padded)
  double gpu_us = 0;         // [µs] median
};

inline constexpr int32_t kCalibrationReferenceBatch = 16;   // the seed's table
inline constexpr int32_t kCalibrationReferenceTokens = 96;  // TimeModelParams::reference_tokens

// The "metadata" object of the calibration file (docs/models.md) from measured points: per
// implementation, gpu_us.<case> = the point at the reference batch; gpu_us_per_token = the
// least-squares slope, through the reference points, of the decode-like cases' (decode, verify,
// adaptive verify, draft, adaptive draft) points of larger batches with N > 96 against
// max(0, N - 96) (the time model adds slope x (N - 96) above 96 tokens; absent without such
// points; clamped at 0); serializes_host = ReadsHostBoundaries.
nlohmann::ordered_json FitCalibration(const std::vector<CalibrationPoint>& points, const std::vector<Impl>& impls,
                                      const std::vector<SeedCase>& cases);

}  // namespace dspark::sim
