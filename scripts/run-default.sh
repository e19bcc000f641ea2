#!/usr/bin/env bash
# The main job: installs the packages it misses, builds only the dspark-sim executable, replays
# the bundled default workload (workloads/default.cfg: 64 Azure-like chat requests, DSpark
# adaptive verification, every step's metadata checked through every implementation), runs
# `bench` (the seed's tables on this GPU) where a CUDA device is present, then writes the plots
# and prints where everything is.
#   scripts/run-default.sh [OUT_DIR]        (default results/default)
# Without a GPU the executable is built CPU-only in build-cpu/ (scripts/build-sim.sh); with one,
# with CUDA in build/ (scripts/build.sh), the folder scripts/test.sh uses.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/default}
t0=$(date +%s)
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
   { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
  gpu=1
fi
if [ "$gpu" = 1 ]; then
  scripts/deps.sh
  build=${DSPARK_BUILD_DIR:-build}
  DSPARK_BUILD_DIR=$build scripts/build.sh --target dspark-sim
else
  scripts/deps.sh --sim
  build=${DSPARK_BUILD_DIR:-build-cpu}
  DSPARK_BUILD_DIR=$build scripts/build-sim.sh
fi
echo "run-default: built in $(( $(date +%s) - t0 )) s (packages included)"
mkdir -p "$out"
"$build/dspark-sim" run --config workloads/default.cfg --out "$out/run"
if [ "$gpu" = 1 ]; then
  "$build/dspark-sim" bench --out "$out/bench"
else
  echo "run-default: no CUDA device here, so no GPU bench; the run above used the CPU emulator and the" \
       "H200 calibration's costs"
fi
python3 plots/plot_all.py "$out" --out "$out/plots"
echo "run-default: done in $(( $(date +%s) - t0 )) s"
echo "run-default: results in $out/run (summary.json, steps.csv, requests.csv, perf.json), plots in $out/plots"
