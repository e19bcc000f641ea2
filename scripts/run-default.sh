#!/usr/bin/env bash
# The README's main command: installs missing packages, builds, and runs the main job on the
# bundled default workload (workloads/default.cfg: 64 chat requests, DSpark adaptive
# verification, every step's metadata checked through every implementation). On a machine
# with a CUDA device it also runs `bench` (the seed's tables on this GPU). Ends by writing the
# plots and printing where everything is.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh >/dev/null
build=${DSPARK_BUILD_DIR:-build}
out=${1:-results/default}
mkdir -p "$out"
"$build/dspark-sim" run --config workloads/default.cfg --out "$out/run"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && "$build/dspark-sim" --help | grep -q '^  bench'; then
  "$build/dspark-sim" bench --out "$out/bench"
else
  echo "run-default: no CUDA device here, so no GPU bench; the run above used CPU emulation with calibrated costs"
fi
python3 plots/plot_all.py "$out" --out "$out/plots"
echo "run-default: results in $out (run/summary.json, steps.csv, requests.csv), plots in $out/plots"
