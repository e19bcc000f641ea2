#!/usr/bin/env bash
# One full GPU session in a single call (device time is scarce): tests, compute-sanitizer, bench
# (with the full adaptive speed-8k run), calibrate, microbench, the Triton baseline and the
# issue's sweep. Everything lands in one archive $OUT/gpu-session.tgz (the device tool returns
# at most 8 files); summaries go to stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
o=/tmp/gpu-session; rm -rf "$o"; mkdir -p "$o"
export PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
OUT="$o" scripts/gpu-run.sh tests sanitize > "$o/tests-sanitize.txt" 2>&1; stamp "tests+sanitize rc=$?"
grep -hE 'PASSED|FAILED|ERROR SUMMARY|RACECHECK SUMMARY|tests ran' "$o"/tests.log "$o"/sanitize-*.log
source build-gpu/env.sh
timeout 240 build-gpu/dspark-sim bench --out "$o/bench" --full-run > "$o/bench.txt" 2>&1; stamp "bench rc=$?"
timeout 90 build-gpu/dspark-sim calibrate --out "$o/calibration_h200.json" > "$o/calibrate.txt" 2>&1; stamp "calibrate rc=$?"
timeout 60 build-gpu/dspark-sim microbench --json "$o/microbench.json" > "$o/microbench.txt" 2>&1; stamp "microbench rc=$?"
timeout 60 python3 scripts/triton_baseline.py --json "$o/triton.json" > "$o/triton.txt" 2>&1; stamp "triton rc=$?"
timeout 120 build-gpu/dspark-sim sweep --config plots/sweep_speed8k.cfg --no-check --calibration "$o/calibration_h200.json" \
  --out "$o/sweep" > "$o/sweep.txt" 2>&1; stamp "sweep (cpu executor on this host) rc=$?"
timeout 90 build-gpu/dspark-sim sweep --workload speed-8k --concurrency 1,8 --num-requests 4 --impl fused,fused-suite \
  --mode adaptive --executor gpu --out "$o/sweep-gpu" > "$o/sweep-gpu.txt" 2>&1; stamp "sweep (gpu executor) rc=$?"
tar czf "$OUT/gpu-session.tgz" -C "$o" .
stamp "archived $(du -sh "$OUT/gpu-session.tgz" | cut -f1)"
tail -n 60 "$o/bench.txt"
