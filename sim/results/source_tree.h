// The source tree a binary runs from, found at run time, because a build folder is carried to
// other machines (to the GPU host it lands at <repo copy>/build-gpu) where the build-time path
// does not exist. It is where the bundled calibration and the git revision are read.
#pragma once

#include <string>

namespace dspark::sim {

inline constexpr char kSourceRootEnv[] = "DSPARK_SOURCE_ROOT";

// $DSPARK_SOURCE_ROOT when set and non-empty; else the nearest folder above the running
// executable that holds sim/layers.cmake (the build folder is inside the tree); else the tree
// the binary was built from, when it still holds sim/layers.cmake (a build folder outside the
// tree); else "" (a binary on its own: built-in defaults, git revision "unknown").
std::string SourceTreeRoot();

// <root>/workloads/calibration_h200.json when it exists, else "" (the time model's defaults).
std::string BundledCalibrationPath();

}  // namespace dspark::sim
