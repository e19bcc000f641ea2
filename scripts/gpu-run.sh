#!/usr/bin/env bash
# There (on the H200 machine): every GPU test, compute-sanitizer (scripts/gpu-sanitize.sh:
# memcheck, racecheck, initcheck, synccheck), then the benchmarks. Logs go to $OUT (or ./gpu-out). Usage:
#   scripts/gpu-run.sh [tests|sanitize|bench|all]...
set -uo pipefail
cd "$(dirname "$0")/.."
source build-gpu/env.sh
out=${OUT:-gpu-out}; mkdir -p "$out"
what=("$@"); [ ${#what[@]} -eq 0 ] && what=(all)
rc=0
want() { for w in "${what[@]}"; do [ "$w" = "$1" ] || [ "$w" = all ] && return 0; done; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1
if want tests; then
  echo "== tests"; build-gpu/dspark_tests --gtest_brief=1 2>&1 | tee "$out/tests.log" | tail -15 || rc=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi
if want sanitize; then
  echo "== compute-sanitizer (scripts/gpu-sanitize.sh)"
  OUT="$out" scripts/gpu-sanitize.sh || rc=1
fi
if want microbench; then
  echo "== microbench"; build-gpu/dspark-sim microbench --json "$out/microbench.json" 2>&1 | tee "$out/microbench.txt" || rc=1
fi
if want bench; then
  echo "== bench"; build-gpu/dspark-sim bench --out "$out/bench" 2>&1 | tee "$out/bench.txt" || rc=1
fi
exit $rc
