#!/usr/bin/env bash
# On a build machine without a GPU: builds build-gpu/ for sm_90 and bundles its shared libraries
# (scripts/device-bundle.sh) so that the folder runs on a GPU machine that has CUDA but none of
# our libraries. The real traces travel with the tree (workloads/traces/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
DSPARK_BUILD_DIR=build-gpu scripts/build.sh
scripts/device-bundle.sh build-gpu
echo "gpu-build: carry build-gpu/ with the tree and run scripts/gpu-run.sh there"
