#!/usr/bin/env bash
# On the GPU machine: the vLLM oracle (docs/oracle.md) over the seed cases and two dumped runs,
# for vLLM 0.31.0 against vllm-0.31 and 0.34.0 against vllm-0.34 (each release against its own
# state), plus the replay harness with 0.34.0's own kernels, eager and with graphs, and the GPU
# executor on vllm-0.34's recorded graphs. Reports go to $OUT (default results-oracle/).
#
# Prepare here (no GPU):   scripts/gpu-build.sh            (build-gpu/)
#                          scripts/fetch-vllm.sh 0.31.0 0.34.0
#                          mkdir -p .vllm-packs && cp .vllm-cache/0.31.0.tar.gz .vllm-cache/0.34.0.tar.gz .vllm-packs/
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

fail() { echo "gpu-oracle: $*" >&2; exit 2; }
[ -x "$SIM" ] || fail "$SIM: not found (build it with scripts/gpu-build.sh and carry build-gpu)"
[ -f "$DATA/azure_llm_inference_conv_2023.csv" ] || fail "$DATA/azure_llm_inference_conv_2023.csv: not found (the traces ship in workloads/traces)"
python3 -c 'import torch, triton, numpy' 2>/dev/null || fail "python3 cannot import torch, triton and numpy here"

mkdir -p "$OUT"
work="$(mktemp -d "${TMPDIR:-/tmp}/dspark-oracle.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export DSPARK_VLLM_CACHE="$work/vllm"
mkdir -p "$DSPARK_VLLM_CACHE"
for v in "${RELEASES[@]}"; do
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
stamp "seed cases"

# Two dumped runs; each run's own metadata check holds both states to the dumped references.
"$SIM" run --trace "$DATA/azure_llm_inference_conv_2023.csv" --num-requests 400 --mode adaptive --impl "$IMPLS" \
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
for v in "${RELEASES[@]}"; do tail -n 1 "$OUT/oracle-$v.log"; done
grep -h "^first bug\|^device time" "$OUT"/replay-*.log || true
stamp "done; reports in $OUT"
exit $rc
