#!/usr/bin/env bash
# GPU work in as few device calls as possible (device time is scarce). Stages, in the order given
# (default: all of them, in this order):
#   tests      every test of the test binary (GPU tests run; the layout fuzz's GPU form included)
#   sanitize   compute-sanitizer memcheck, racecheck, initcheck, synccheck (scripts/gpu-sanitize.sh;
#              SANITIZE_FILTER narrows it to the kernels a change touched)
#   fuzz       the layout fuzz's GPU form over DSPARK_FUZZ_GPU_LAYOUTS layouts (default 1,000,000)
#   bench      bench with the full adaptive speed-8k run (event and CUPTI methods)
#   calibrate  the metadata-cost calibration file
#   microbench, triton, torchops   the mapping + indexer pair, the Triton pair of #56562, PyTorch's
#              own (c) ops (scripts/torch_op_costs.py)
#   replay     a dumped real-trace run replayed through the Triton pair (scripts/replay_steps.py's example)
#   gpuexec    the GPU executor's throughput: every implementation, DeepSeek-V4's states, then (d) +
#              fused-suite, cold and warm L2
#   sweep      the GPU-executor sweep
# Everything lands in one archive $OUT/gpu-session.tgz (the device tool returns at most 8 files);
# summaries go to stdout. GPU_SESSION_BUDGET_S bounds the whole call.
#   usage: scripts/gpu-session.sh [stage ...]
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
stages=("$@"); [ ${#stages[@]} -eq 0 ] && stages=(tests sanitize fuzz bench calibrate microbench triton torchops replay sweep)
source build-gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$o/gpu.txt" 2>&1
for stage in "${stages[@]}"; do
  case "$stage" in
    tests)
      (cd build-gpu && timeout $(left 240) ./dspark_tests --gtest_brief=1 > "$o/tests.log" 2>&1); stamp "tests rc=$?"
      grep -hE "PASSED|FAILED|tests ran|layouts" "$o/tests.log" | tail -20 ;;
    sanitize)
      OUT="$o" SANITIZE_TIMEOUT=$(left ${SANITIZE_TIMEOUT:-200}) scripts/gpu-sanitize.sh > "$o/sanitize.txt" 2>&1
      stamp "sanitize rc=$?"; cat "$o"/sanitize/summary.txt 2>/dev/null | tail -30 ;;
    fuzz)
      # ~2,800 layouts/s on the H200 (the driver's launch rate: ~229 launches per layout), so a
      # million takes ~360 s: FUZZ_SECONDS (default 400) bounds it.
      fz=${FUZZ_SECONDS:-400}
      (cd build-gpu && DSPARK_FUZZ_GPU_LAYOUTS=${DSPARK_FUZZ_GPU_LAYOUTS:-1000000} DSPARK_FUZZ_GPU_SECONDS=$(left "$fz") \
        timeout $(left $((fz + 10))) ./dspark_tests --gtest_filter='FuzzLayoutsGpu.SeededLayouts*' > "$o/fuzz_gpu.log" 2>&1)
      stamp "fuzz rc=$?"; grep -vE "^\[ +(RUN|OK) " "$o/fuzz_gpu.log" | tail -12 ;;
    bench)
      timeout $(left 240) build-gpu/dspark-sim bench --out "$o/bench" --full-run > "$o/bench.txt" 2>&1; stamp "bench rc=$?"
      sed -n '/### Seed layout (graph/,/### Launches/p' "$o/bench.txt" ;;
    calibrate)
      timeout $(left 60) build-gpu/dspark-sim calibrate --out "$o/calibration_h200.json" > "$o/calibrate.txt" 2>&1
      stamp "calibrate rc=$?" ;;
    microbench)
      timeout $(left 45) build-gpu/dspark-sim microbench --json "$o/microbench.json" > "$o/microbench.txt" 2>&1
      stamp "microbench rc=$?"; grep -E "^## |mapping\+indexer" "$o/microbench.txt" | head -12 ;;
    triton)
      timeout $(left 45) python3 scripts/triton_baseline.py --json "$o/triton.json" > "$o/triton.txt" 2>&1
      stamp "triton rc=$?"; tail -8 "$o/triton.txt" ;;
    torchops)
      timeout $(left 45) python3 scripts/torch_op_costs.py --json "$o/torch_op_costs.json" > "$o/torch_op_costs.txt" 2>&1
      stamp "torchops rc=$?" ;;
    replay)
      timeout $(left 40) build-gpu/dspark-sim run --trace workloads/traces/azure_llm_inference_conv_2023.csv --num-requests 64 \
        --mode adaptive --no-check --out "$o/dump-run" --dump-steps "$o/dump" --dump-steps-limit 400 > "$o/dump-run.txt" 2>&1
      stamp "dump rc=$?"
      timeout $(left 90) python3 scripts/replay_steps.py "$o/dump" --device cuda \
        --impl scripts/replay_examples/triton_56562.py:build --json "$o/replay_triton.json" > "$o/replay_triton.txt" 2>&1
      stamp "replay triton rc=$?"; tail -5 "$o/replay_triton.txt"; rm -rf "$o/dump" ;;
    gpuexec)
      # The GPU executor's throughput: 64 Azure requests, every implementation replayed and
      # checked on the device every step (cold L2); then only (d) and fused-suite, cold and warm.
      # GpuExecutor.TheDeviceCheckAgreesWithTheWholeBufferOracle (tests) compares the check with
      # the old whole-buffer download, which is too slow to rerun here.
      # Every implementation: GPUEXEC_REPEATS runs (default 3), then their median steps/s.
      T=workloads/traces/azure_llm_inference_conv_2023.csv
      for k in $(seq 1 ${GPUEXEC_REPEATS:-3}); do
        timeout $(left 90) build-gpu/dspark-sim run --trace $T --num-requests 64 --executor gpu --no-check \
          --out "$o/az-all-cold-$k" > "$o/az-all-cold-$k.txt" 2>&1; stamp "gpuexec all (cold) run $k rc=$?"
        grep -h "steps/s" "$o/az-all-cold-$k.txt" | tail -1
      done
      sed -nE 's/.* wall = ([0-9.]+) steps\/s.*/\1/p' "$o"/az-all-cold-*.txt | sort -n |
        awk '{v[NR]=$1} END {if (NR) printf "gpuexec all (cold): median %s steps/s of %d runs\n", v[int((NR+1)/2)], NR}'
      # DeepSeek-V4's states as released ((a)-(c)), the same way.
      for k in $(seq 1 ${GPUEXEC_REPEATS:-3}); do
        timeout $(left 60) build-gpu/dspark-sim run --model v4 --trace $T --num-requests 64 --executor gpu --no-check \
          --out "$o/az-v4-cold-$k" > "$o/az-v4-cold-$k.txt" 2>&1; stamp "gpuexec v4 (cold) run $k rc=$?"
        grep -h "steps/s" "$o/az-v4-cold-$k.txt" | tail -1
      done
      sed -nE 's/.* wall = ([0-9.]+) steps\/s.*/\1/p' "$o"/az-v4-cold-*.txt | sort -n |
        awk '{v[NR]=$1} END {if (NR) printf "gpuexec v4 (cold): median %s steps/s of %d runs\n", v[int((NR+1)/2)], NR}'
      for l2 in cold warm; do
        timeout $(left 60) build-gpu/dspark-sim run --trace $T --num-requests 64 --executor gpu --no-check --gpu-l2 $l2 \
          --impl vllm-56562,fused-suite --out "$o/az-d-$l2" > "$o/az-d-$l2.txt" 2>&1; stamp "gpuexec d+fused-suite ($l2) rc=$?"
        grep -h "steps/s" "$o/az-d-$l2.txt" | tail -1
      done ;;
    sweep)
      timeout $(left 60) build-gpu/dspark-sim sweep --workload speed-8k --concurrency 1,8 --num-requests 4 \
        --time-impl after,fused-suite --mode adaptive --executor gpu --out "$o/sweep-gpu" > "$o/sweep-gpu.txt" 2>&1
      stamp "sweep (gpu executor) rc=$?" ;;
    *) echo "gpu-session: unknown stage '$stage'" >&2 ;;
  esac
done
archive
stamp "archived $(du -sh "$OUT/gpu-session.tgz" | cut -f1)"
