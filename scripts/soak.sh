#!/usr/bin/env bash
# The soak (sim/studies/soak.h, docs/reliability.md "Soak"): builds dspark-sim when needed, then runs
# `dspark-sim soak --steps 1000000` (two same-seed runs, invariants every step, digests, RSS)
# and prints its summary; the figures go to results/soak/soak.json. Extra arguments go to the
# command (e.g. --seed 3, --steps 200000, --out DIR). Exits non-zero when a check failed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
build=${DSPARK_BUILD_DIR:-build}
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$build" -j"$(nproc)" --target dspark-sim >/dev/null
# The option parser rejects an option given twice, so a default yields to the caller's.
given() { for a in "${@:2}"; do [[ "$a" == "$1" || "$a" == "$1="* ]] && return 0; done; return 1; }
defaults=()
given --steps "$@" || defaults+=(--steps 1000000)
given --out "$@" || defaults+=(--out results/soak)
exec "$build/dspark-sim" soak "${defaults[@]}" "$@"
