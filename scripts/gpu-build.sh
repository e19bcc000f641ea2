#!/usr/bin/env bash
# Here (no GPU): builds build-gpu/ for sm_90 and bundles its shared libraries so the folder runs
# on the H200 machine, which has CUDA but none of our libraries. Copies the traces GPU runs read
# into .gpu-data/ (ignored by git), because ../shared does not travel.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
DSPARK_BUILD_DIR=build-gpu scripts/build.sh
../shared/tools/device-bundle.sh build-gpu
mkdir -p .gpu-data
for f in ../shared/data/*.csv; do [ -f "$f" ] && cp -u "$f" .gpu-data/; done
echo "gpu-build: carry [\"build-gpu\", \".gpu-data\"] and run scripts/gpu-run.sh there"
