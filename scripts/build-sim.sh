#!/usr/bin/env bash
# Builds the dspark-sim executable alone, CPU-only, into build-cpu/ (or $DSPARK_BUILD_DIR):
# no nvcc, no GPU and no test framework needed. Every kernel runs in the CPU emulator, so `run`,
# `sweep`, `verify`, `step` and `soak` work in full; the GPU commands (bench, calibrate,
# microbench) need scripts/build.sh's CUDA build. Safe to rerun: only what changed is rebuilt.
#   scripts/build-sim.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DSPARK_BUILD_DIR:-build-cpu}
echo "build-sim: configuring $build/ (CPU-only Release, the dspark-sim target)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDSPARK_ENABLE_CUDA=OFF -DDSPARK_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target dspark-sim
echo "build-sim: $build/dspark-sim"
