#!/usr/bin/env bash
# There (on the H200 machine): the three GPU faults of docs/reliability.md ("Faults"), end to end
# through the CLI:
# an injected CUDA error mid-run, no visible device, and a capacity beyond device memory.
# Prints each command's exit status and message. The injected error needs the executor's test
# seam, so it runs as its tests (tests/robustness/test_gpu_faults_gpu.cu), which read the aborted
# run's files back.
set -uo pipefail
cd "$(dirname "$0")/.."
source build-gpu/env.sh
out=${OUT:-gpu-out}/faults; mkdir -p "$out"
sim=build-gpu/dspark-sim
echo "== CUDA error at step 5 (the GPU executor's fault seam, set by its test factory)"
build-gpu/dspark_tests --gtest_filter='GpuFaultInjection.*' --gtest_brief=1; echo "exit $?"
echo "== no visible device (CUDA_VISIBLE_DEVICES=)"
CUDA_VISIBLE_DEVICES= $sim bench; echo "exit $?"
CUDA_VISIBLE_DEVICES= $sim run --workload batch1-512 --num-requests 1 --executor gpu --out "$out/nodev"; echo "exit $?"
echo "== capacity beyond device memory"
$sim run --workload batch1-512 --num-requests 1 --executor gpu --no-check --max-model-len 16777216 \
  --max-num-batched-tokens 16777216 --out "$out/big"; echo "exit $?"
$sim microbench --capacity 2000000000 --bt-stride 100000; echo "exit $?"
