#!/usr/bin/env bash
# On the GPU machine: the vLLM oracle (docs/oracle.md) on DeepSeek-V4 (docs/states.md s.3, s.9):
# the seed cases and the steps of a dumped run, each built by a release's own DeepSeek-V4 builders
# and compared field by field, launch by launch, with our state of that release: vllm-0.24 against
# vLLM 0.24.0 (state (a)), vllm-0.27 against 0.27.1 (b), vllm-0.29 against 0.29.0 (c). Reports go
# to $OUT (default results-oracle-v4/), one oracle-v4-VERSION.json per release.
#
# Prepare here (no GPU):   scripts/gpu-build.sh            (build-gpu/)
#                          scripts/fetch-vllm.sh 0.24.0 0.27.1 0.29.0
#                          scripts/oracle/pack-vllm.sh .vllm-packs 0.24.0 0.27.1 0.29.0
# Carry:                   ["build-gpu", ".vllm-packs"]
# Run there:               scripts/gpu-oracle-v4.sh
#
# The dumped run is a DeepSeek-V4 run (`run --model v4`: 256-token KV blocks, the V4 states); its
# index.json names the model, and `dspark-sim step --model v4` gives ours (one process per step,
# --ours-from-sim). DSPARK_ORACLE_STEPS (default 1000) caps the dump; every DSPARK_ORACLE_PROFILE_EVERY-th
# dumped step (default 10) has its launches counted by the profiler and compared with ours.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-results-oracle-v4}"
SIM="${DSPARK_SIM:-build-gpu/dspark-sim}"
PACKS="${DSPARK_VLLM_PACKS:-.vllm-packs}"
DATA="${DSPARK_DATA_DIR:-workloads/traces}"
STEPS="${DSPARK_ORACLE_STEPS:-1000}"
# release=implementation pairs: each V4 state against the release it names.
PAIRS=(${DSPARK_ORACLE_V4_PAIRS:-0.24.0=vllm-0.24 0.27.1=vllm-0.27 0.29.0=vllm-0.29})

fail() { echo "gpu-oracle-v4: $*" >&2; exit 2; }
[ -x "$SIM" ] || fail "$SIM: not found (build it with scripts/gpu-build.sh and carry build-gpu)"
[ -f "$DATA/azure_llm_inference_conv_2023.csv" ] || fail "$DATA/azure_llm_inference_conv_2023.csv: not found"
python3 -c 'import torch, triton, numpy' 2>/dev/null || fail "python3 cannot import torch, triton and numpy here"

mkdir -p "$OUT"
work="$(mktemp -d "${TMPDIR:-/tmp}/dspark-oracle-v4.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export DSPARK_VLLM_CACHE="$work/vllm"
mkdir -p "$DSPARK_VLLM_CACHE"
for pair in "${PAIRS[@]}"; do
  v="${pair%%=*}"
  [ -f "$PACKS/$v.tar.gz" ] || fail "$PACKS/$v.tar.gz: not found (scripts/fetch-vllm.sh $v, copy the pack into $PACKS)"
  tar -xzf "$PACKS/$v.tar.gz" -C "$DSPARK_VLLM_CACHE"
done
export TRITON_CACHE_DIR="$work/triton"

"$SIM" run --model v4 --trace "$DATA/azure_llm_inference_conv_2023.csv" --num-requests 400 --mode adaptive \
  --dump-steps "$work/azure" --dump-steps-limit "$STEPS" --out "$OUT/run-azure" >"$OUT/run-azure.log" 2>&1 || true

# The releases run side by side (DSPARK_ORACLE_V4_SERIAL=1: one after another): each is a Python
# process and its `dspark-sim step` children, bound by the host, not by the GPU, so three of them
# take about as long as one on a machine with the cores for it.
one_release() {  # release impl: seed cases, then the oracle over them and the dump
  local v="$1" impl="$2"
  mkdir -p "$work/seed-$impl"
  for c in prefill chunked_prefill mixed decode verify adaptive_verify draft adaptive_draft; do
    "$SIM" step --model v4 --case "$c" --batch 16 --seed 4 --impl "$impl" --out "$work/seed-$impl/$c.json" >/dev/null ||
      echo "gpu-oracle-v4: dspark-sim step --model v4 --case $c --impl $impl exited $?"
  done
  python3 scripts/oracle/vllm_oracle.py --release "$v" --model v4 --device "${DSPARK_ORACLE_DEVICE:-cuda}" \
    --impl "$impl" --sim "$SIM" --ours-from-sim --no-timing --steps "$work/seed-$impl"/*.json \
    --dump "$work/azure" --profile-every "${DSPARK_ORACLE_PROFILE_EVERY:-10}" --out "$OUT/oracle-v4-$v.json" >"$OUT/oracle-v4-$v.log" 2>&1
}
rc=0
pids=()
for pair in "${PAIRS[@]}"; do
  v="${pair%%=*}"; impl="${pair#*=}"
  if [ "${DSPARK_ORACLE_V4_SERIAL:-0}" = 1 ]; then
    one_release "$v" "$impl" || rc=1
  else
    one_release "$v" "$impl" & pids+=($!)
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
for pair in "${PAIRS[@]}"; do tail -1 "$OUT/oracle-v4-${pair%%=*}.log"; done
exit $rc
