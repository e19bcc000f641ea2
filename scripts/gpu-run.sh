#!/usr/bin/env bash
# There (on the H200 machine): every GPU test, compute-sanitizer (memcheck, racecheck, initcheck)
# on the GPU tests, then the benchmarks. Logs go to $OUT (or ./gpu-out). Usage:
#   scripts/gpu-run.sh [tests|sanitize|bench|all]...
set -uo pipefail
cd "$(dirname "$0")/.."
source build-gpu/env.sh
out=${OUT:-gpu-out}; mkdir -p "$out"
export DSPARK_DATA_DIR="$PWD/.gpu-data"
what=("$@"); [ ${#what[@]} -eq 0 ] && what=(all)
rc=0
want() { for w in "${what[@]}"; do [ "$w" = "$1" ] || [ "$w" = all ] && return 0; done; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1
if want tests; then
  echo "== tests"; build-gpu/dspark_tests --gtest_brief=1 2>&1 | tee "$out/tests.log" | tail -15 || rc=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi
if want sanitize; then
  # GpuFaultInjection makes a CUDA call fail on purpose; the sanitizer would count it as an error.
  for tool in memcheck racecheck initcheck; do
    echo "== compute-sanitizer $tool"
    timeout "${SANITIZER_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --error-exitcode 9 build-gpu/dspark_tests --gtest_filter='*Gpu*:-GpuFaultInjection.*' --gtest_brief=1 \
      > "$out/sanitize-$tool.log" 2>&1; s=$?
    grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$out/sanitize-$tool.log" | tail -4
    [ $s -eq 0 ] || { rc=1; echo "sanitizer $tool exit $s"; }
  done
fi
if want microbench; then
  echo "== microbench"; build-gpu/dspark-sim microbench --json "$out/microbench.json" 2>&1 | tee "$out/microbench.txt" || rc=1
fi
if want bench; then
  echo "== bench"; build-gpu/dspark-sim bench --out "$out/bench" 2>&1 | tee "$out/bench.txt" || rc=1
fi
exit $rc
