#!/usr/bin/env bash
# On a build machine without a GPU: builds the CUDA (sm_90) tree in build/ (scripts/build.sh, the
# same folder the tests use), then assembles build-gpu/, the folder a GPU machine needs: the
# executables, stripped, their shared libraries (scripts/device-bundle.sh) and env.sh. It holds no
# object files, so it fits a small carry (~35 MB). The real traces travel with the tree
# (workloads/traces/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
build=${DSPARK_BUILD_DIR:-build}
DSPARK_BUILD_DIR=$build scripts/build.sh
rm -rf build-gpu
mkdir -p build-gpu
for exe in dspark-sim dspark_tests dspark_initcheck_probe; do
  [ -x "$build/$exe" ] || { echo "gpu-build: $build/$exe was not built (is nvcc on PATH?)" >&2; exit 1; }
  cp "$build/$exe" build-gpu/
  strip build-gpu/$exe
done
scripts/device-bundle.sh build-gpu
echo "gpu-build: carry build-gpu/ with the tree and run scripts/gpu-run.sh there"
