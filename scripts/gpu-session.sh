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
# Every step gets at most its own limit and never more than what is left of the whole budget,
# so the archive below is always written.
budget=${GPU_SESSION_BUDGET_S:-510}
left() { local l=$(( budget - ($(date +%s) - t0) )); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
archive() { tar czf "$OUT/gpu-session.tgz" -C "$o" . 2>/dev/null; }
trap archive EXIT
OUT="$o" SANITIZE_TIMEOUT=200 scripts/gpu-run.sh tests sanitize > "$o/tests-sanitize.txt" 2>&1; stamp "tests+sanitize rc=$?"
grep -hE "PASSED|FAILED|tests ran" "$o"/tests.log; cat "$o"/sanitize/summary.txt "$o"/sanitize/probe-summary.txt
source build-gpu/env.sh
timeout $(left 200) build-gpu/dspark-sim bench --out "$o/bench" --full-run > "$o/bench.txt" 2>&1; stamp "bench rc=$?"
timeout $(left 60) build-gpu/dspark-sim calibrate --out "$o/calibration_h200.json" > "$o/calibrate.txt" 2>&1; stamp "calibrate rc=$?"
timeout $(left 45) build-gpu/dspark-sim microbench --json "$o/microbench.json" > "$o/microbench.txt" 2>&1; stamp "microbench rc=$?"
timeout $(left 45) python3 scripts/triton_baseline.py --json "$o/triton.json" > "$o/triton.txt" 2>&1; stamp "triton rc=$?"
# Issue 11's worked example: a dumped real-trace run replayed through the Triton pair of #56562.
timeout $(left 40) build-gpu/dspark-sim run --trace .gpu-data/azure_llm_inference_conv_2023.csv --num-requests 64 \
  --mode adaptive --no-check --out "$o/dump-run" --dump-steps "$o/dump" --dump-steps-limit 400 > "$o/dump-run.txt" 2>&1
stamp "dump rc=$?"
timeout $(left 90) python3 scripts/replay_steps.py "$o/dump" --device cuda --impl scripts/replay_examples/triton_56562.py:build \
  --json "$o/replay_triton.json" > "$o/replay_triton.txt" 2>&1; stamp "replay triton rc=$?"; cat "$o/replay_triton.txt"
rm -rf "$o/dump"
timeout $(left 60) build-gpu/dspark-sim sweep --config plots/sweep_speed8k.cfg --no-check --calibration "$o/calibration_h200.json" \
  --out "$o/sweep" > "$o/sweep.txt" 2>&1; stamp "sweep (cpu executor on this host) rc=$?"
timeout $(left 60) build-gpu/dspark-sim sweep --workload speed-8k --concurrency 1,8 --num-requests 4 --impl fused,fused-suite \
  --mode adaptive --executor gpu --out "$o/sweep-gpu" > "$o/sweep-gpu.txt" 2>&1; stamp "sweep (gpu executor) rc=$?"
archive
stamp "archived $(du -sh "$OUT/gpu-session.tgz" | cut -f1)"
tail -n 60 "$o/bench.txt"
