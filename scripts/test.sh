#!/usr/bin/env bash
# The README's test command: installs missing packages, builds, runs every test (GPU tests run
# for real where a CUDA device is present and skip, saying so, where none is).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
build=${DSPARK_BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
