#!/usr/bin/env bash
# Configures and builds everything (the executable, the tests; CUDA code when nvcc is present)
# into build/ (or $DSPARK_BUILD_DIR). Extra arguments go to `cmake --build`, e.g. --target dspark-sim.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
build=${DSPARK_BUILD_DIR:-build}
echo "build: configuring $build/ (Release, CUDA sm_90 when nvcc is present)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$build" -j"$(nproc)" "$@"
