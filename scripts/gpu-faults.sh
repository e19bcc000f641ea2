#!/usr/bin/env bash
# There (on the H200 machine): the three GPU faults of docs/reliability.md ("Faults"), end to end
# through the CLI:
# an injected CUDA error mid-run, no visible device, and a capacity beyond device memory.
# Prints each command's exit status and message; the aborted run's summary goes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
source build-gpu/env.sh
out=${OUT:-gpu-out}/faults; mkdir -p "$out"
sim=build-gpu/dspark-sim
echo "== CUDA error at step 5 (DSPARK_GPU_FAULT_AT_STEP=5)"
DSPARK_GPU_FAULT_AT_STEP=5 $sim run --workload batch1-512 --num-requests 2 --executor gpu --impl fused,chain \
  --no-check --out "$out/fault"; echo "exit $?"
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print({k: s.get(k) for k in ('status','steps_completed','error')})" \
  "$out/fault/summary.json"
echo "== no visible device (CUDA_VISIBLE_DEVICES=)"
CUDA_VISIBLE_DEVICES= $sim bench; echo "exit $?"
CUDA_VISIBLE_DEVICES= $sim run --workload batch1-512 --num-requests 1 --executor gpu --out "$out/nodev"; echo "exit $?"
echo "== capacity beyond device memory"
$sim run --workload batch1-512 --num-requests 1 --executor gpu --no-check --max-model-len 16777216 \
  --max-num-batched-tokens 16777216 --out "$out/big"; echo "exit $?"
$sim microbench --capacity 2000000000 --bt-stride 100000; echo "exit $?"
