#!/usr/bin/env bash
# On the GPU machine: the vLLM oracle (docs/oracle.md) over the seed cases and two dumped runs,
# for vLLM 0.31.0 against vllm-0.31 and 0.34.0 against vllm-0.34 (each release against its own
# state); the seed's Before builder by builder against 0.29.0 (token map, indexer chains) and
# 0.30.0 (its V4.1 builders); the replay harness with 0.34.0's own kernels, eager and with
# graphs; the GPU executor on vllm-0.34's recorded graphs; and the seed's table with the
# releases' µs and launches beside `bench`'s (scripts/oracle/seed_table.py). Reports go to $OUT
# (default results-oracle/).
#
# Prepare here (no GPU):   scripts/gpu-build.sh            (build-gpu/)
#                          scripts/fetch-vllm.sh 0.29.0 0.30.0 0.31.0 0.34.0
#                          scripts/oracle/pack-vllm.sh .vllm-packs 0.29.0 0.30.0 0.31.0 0.34.0   (slim, ~2 MB each)
# Carry:                   ["build-gpu", ".vllm-packs"]
# Run there:               scripts/gpu-oracle.sh
#
# Needs on that machine: python3 with numpy, torch and triton (nothing is installed). Device time
# is about 4-6 minutes: the two dumps take seconds, the oracles of the two releases run side by
# side on the one GPU, then the replays and two short GPU-executor runs (vllm-0.31 beside
# vllm-0.34). DSPARK_ORACLE_STEPS (default 1000) caps each dump.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-results-oracle}"
SIM="${DSPARK_SIM:-build-gpu/dspark-sim}"
PACKS="${DSPARK_VLLM_PACKS:-.vllm-packs}"
DATA="${DSPARK_DATA_DIR:-workloads/traces}"
STEPS="${DSPARK_ORACLE_STEPS:-1000}"
RELEASES=(${DSPARK_ORACLE_RELEASES:-0.31.0 0.34.0})
IMPLS=vllm-0.31,vllm-0.34
impl_of() { if [ "$1" = 0.34.0 ]; then echo vllm-0.34; else echo vllm-0.31; fi; }
BEFORE=vllm-pre56562  # the seed's Before: an upstream snapshot between 0.29.0 and 0.30.0
BEFORE_CHAINS=0.29.0  # its token map and indexer chains
BEFORE_V41=0.30.0     # its V4.1 builders (SWA with the two-launch mask, MLA, ring)

fail() { echo "gpu-oracle: $*" >&2; exit 2; }
[ -x "$SIM" ] || fail "$SIM: not found (build it with scripts/gpu-build.sh and carry build-gpu)"
[ -f "$DATA/azure_llm_inference_conv_2023.csv" ] || fail "$DATA/azure_llm_inference_conv_2023.csv: not found (the traces ship in workloads/traces)"
python3 -c 'import torch, triton, numpy' 2>/dev/null || fail "python3 cannot import torch, triton and numpy here"

mkdir -p "$OUT"
work="$(mktemp -d "${TMPDIR:-/tmp}/dspark-oracle.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export DSPARK_VLLM_CACHE="$work/vllm"
mkdir -p "$DSPARK_VLLM_CACHE"
for v in "${RELEASES[@]}" "$BEFORE_CHAINS" "$BEFORE_V41"; do
  [ -f "$PACKS/$v.tar.gz" ] || fail "$PACKS/$v.tar.gz: not found (scripts/fetch-vllm.sh $v, copy the pack into $PACKS)"
  tar -xzf "$PACKS/$v.tar.gz" -C "$DSPARK_VLLM_CACHE"
done
export TRITON_CACHE_DIR="$work/triton"
t0=$(date +%s)
stamp() { echo "gpu-oracle: $(( $(date +%s) - t0 )) s: $*"; }

# The seed's eight cases, as `bench` and `verify` draw them (batch 16, seed 4), with our outputs.
mkdir -p "$work/seed"
for v in "${RELEASES[@]}"; do
  impl="$(impl_of "$v")"
  mkdir -p "$work/seed/$v"
  for c in prefill chunked_prefill mixed decode verify adaptive_verify draft adaptive_draft; do
    # exit 1 means our implementation differs from its own reference there; the oracle still runs
    "$SIM" step --case "$c" --batch 16 --seed 4 --impl "$impl" --out "$work/seed/$v/$c.json" >/dev/null ||
      echo "gpu-oracle: dspark-sim step --case $c --impl $impl exited $? (see the oracle's report)"
  done
done
mkdir -p "$work/seed-before"
for c in prefill chunked_prefill mixed decode verify adaptive_verify draft adaptive_draft; do
  "$SIM" step --case "$c" --batch 16 --seed 4 --impl "$BEFORE" --out "$work/seed-before/$c.json" >/dev/null ||
    echo "gpu-oracle: dspark-sim step --case $c --impl $BEFORE exited $? (see the oracle's report)"
done
stamp "seed cases"

# Two dumped runs; each run's own metadata check holds both states to the dumped references.
"$SIM" run --trace "$DATA/azure_llm_inference_conv_2023.csv" --num-requests 400 --mode adaptive --impl "$IMPLS,$BEFORE" \
  --dump-steps "$work/azure" --dump-steps-limit "$STEPS" --out "$OUT/run-azure" >"$OUT/run-azure.log" 2>&1 || rc_runs=1
"$SIM" run --workload speed-8k --concurrency 64 --mode adaptive --impl "$IMPLS" \
  --dump-steps "$work/speed8k" --dump-steps-limit "$STEPS" --out "$OUT/run-speed8k" >"$OUT/run-speed8k.log" 2>&1 || rc_runs=1
stamp "dumps (run exit ${rc_runs:-0}: see run-*.log)"

# The oracle, one process per release, side by side on the GPU.
pids=()
for v in "${RELEASES[@]}"; do
  python3 scripts/oracle/vllm_oracle.py --release "$v" --device "${DSPARK_ORACLE_DEVICE:-cuda}" --impl "$(impl_of "$v")" \
    --sim "$SIM" --steps "$work/seed/$v"/*.json --dump "$work/azure" --dump "$work/speed8k" --profile-every 25 \
    --out "$OUT/oracle-$v.json" >"$OUT/oracle-$v.log" 2>&1 &
  pids+=($!)
done
# The Before, builder by builder: one release per process, each on the builders it holds.
for spec in "$BEFORE_CHAINS:token_map,indexer_r1,indexer_r2" "$BEFORE_V41:swa,mla_r2,ring"; do
  v="${spec%%:*}"
  python3 scripts/oracle/vllm_oracle.py --release "$v" --device "${DSPARK_ORACLE_DEVICE:-cuda}" --impl "$BEFORE" \
    --builders "${spec#*:}" --steps "$work"/seed-before/*.json --dump "$work/azure" --profile-every 25 \
    --out "$OUT/before-$v.json" >"$OUT/before-$v.log" 2>&1 &
  pids+=($!)
done
rc=${rc_runs:-0}
for p in "${pids[@]}"; do wait "$p" || rc=1; done
stamp "oracle (exit $rc)"

# The replay harness with 0.34.0's own #56562 kernels: eager, then with vLLM-keyed graphs.
for d in azure speed8k; do
  for mode in eager graphs; do
    flag=(); [ "$mode" = graphs ] && flag=(--graphs)
    DSPARK_VLLM_RELEASE=0.34.0 python3 scripts/replay_steps.py "$work/$d" --device cuda "${flag[@]}" \
      --impl scripts/replay_examples/vllm_release.py:build --json "$OUT/replay-$d-$mode.json" \
      >"$OUT/replay-$d-$mode.log" 2>&1 || rc=1
  done
done
stamp "replays (exit $rc)"
"$SIM" verify --impl "$IMPLS" --json "$OUT/verify.json" >"$OUT/verify.log" 2>&1 || rc=1
# vllm-0.34 as vLLM 0.34.0 runs it on the device: recorded graphs (KV-cache groups as concurrent
# branches) for FULL uniform-decode steps, eager otherwise, every step checked; beside vllm-0.31.
"$SIM" run --trace "$DATA/azure_llm_inference_conv_2023.csv" --num-requests 64 --mode none --executor gpu \
  --impl "$IMPLS" --out "$OUT/gpu-exec-decode" >"$OUT/gpu-exec-decode.log" 2>&1 || rc=1
"$SIM" run --trace "$DATA/azure_llm_inference_conv_2023.csv" --num-requests 64 --mode adaptive --executor gpu \
  --impl "$IMPLS" --out "$OUT/gpu-exec-adaptive" >"$OUT/gpu-exec-adaptive.log" 2>&1 || rc=1
stamp "gpu executor (exit $rc)"

# The seed's table: our states by `bench` (the oracle's cases: batch 16, seed 4) beside the
# releases' own suites as the oracle timed and profiled them.
"$SIM" bench --no-tpot --batch 16 --seed 4 --out "$OUT/bench" >"$OUT/bench.log" 2>&1 || rc=1
oracle_args=(); for v in "${RELEASES[@]}"; do oracle_args+=(--oracle "$OUT/oracle-$v.json"); done
python3 scripts/oracle/seed_table.py --bench "$OUT/bench/bench.json" "${oracle_args[@]}" \
  --before "$OUT/before-$BEFORE_CHAINS.json" --before "$OUT/before-$BEFORE_V41.json" \
  --out "$OUT/seed-table.md" >"$OUT/seed-table.log" 2>&1 || rc=1
stamp "bench and seed table (exit $rc)"
for v in "${RELEASES[@]}"; do tail -n 1 "$OUT/oracle-$v.log"; done
for v in "$BEFORE_CHAINS" "$BEFORE_V41"; do tail -n 1 "$OUT/before-$v.log"; done
grep -h "^first bug\|^device time" "$OUT"/replay-*.log || true
stamp "done; reports in $OUT"
exit $rc
