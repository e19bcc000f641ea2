#!/usr/bin/env bash
# There (on the H200 machine): compute-sanitizer memcheck, racecheck, initcheck and synccheck over
# every GPU test of the test binary and over a short `dspark-sim run --executor gpu`. Every tool
# runs sharded and in parallel (each instrumented process is CPU-bound; the GPU is shared), so the
# whole matrix fits one device call. Logs go to $OUT/sanitize (or ./gpu-out/sanitize); the
# summary lines go to stdout and to summary.txt. Exit status: 0 only when every run is clean.
#   SANITIZE_TOOLS="memcheck racecheck initcheck synccheck"  SANITIZE_SHARDS=3  SANITIZE_TIMEOUT=300
# racecheck gets twice the shards: the GPU-executor tests take minutes under it.
set -uo pipefail
cd "$(dirname "$0")/.."
source build-gpu/env.sh
out=${OUT:-gpu-out}/sanitize; mkdir -p "$out"
tools=${SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}
shards=${SANITIZE_SHARDS:-3}
limit=${SANITIZE_TIMEOUT:-300}
# The GPU tests: every suite defined in tests/*.cu (a few of them are host-only and cost little).
# Left out: TpotLoop.ForwardStandInLastsWhatItIsAskedTo asserts a duration, which
# instrumentation stretches; GpuFaultInjection.* issues a failing CUDA call on purpose;
# GpuFaults.SizesBeyond* allocates ~42 GiB, which parallel instrumented shards cannot all hold.
# For initcheck also InitcheckProbeGpu.* (tests/test_initcheck_probe_gpu.cu), which reproduces
# the tool's report on a graph's first replay; it runs apart, below, and its error counts are
# printed as evidence.
suites=$(grep -ohE '^(TEST|TEST_P|TEST_F)\((\w+),' tests/*.cu | sed -E 's/.*\((\w+),/\1/' | sort -u)
positive=$(for s in $suites; do printf '*%s.*:' "$s"; done)
filter=${SANITIZE_FILTER:-"${positive%:}:-TpotLoop.ForwardStandInLastsWhatItIsAskedTo:GpuFaultInjection.*:GpuFaults.SizesBeyond*"}
run_cfg=(run --workload batch1-512 --num-requests 2 --executor gpu --impl fused,fused-suite,chain --no-check)

pids=()
for tool in $tools; do
  extra=(); f=$filter; n=$shards
  [ "$tool" = racecheck ] && { extra=(--racecheck-report all); n=$((2 * shards)); }
  [ "$tool" = initcheck ] && f="$filter:InitcheckProbeGpu.*"
  for ((s = 0; s < n; ++s)); do
    ( GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$s timeout "$limit" \
        compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 9 \
        build-gpu/dspark_tests --gtest_filter="$f" --gtest_brief=1 > "$out/$tool-tests-$s.log" 2>&1
      echo $? > "$out/$tool-tests-$s.rc" ) &
    pids+=($!)
  done
  ( timeout "$limit" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 9 \
      build-gpu/dspark-sim "${run_cfg[@]}" --out "$out/run-$tool" > "$out/$tool-run.log" 2>&1
    echo $? > "$out/$tool-run.rc" ) &
  pids+=($!)
done
wait "${pids[@]}"

# The initcheck probe, each case alone in its own process: error counts, not pass/fail.
for t in ChainGraphZeroLens ChainGraph6x64 ChainEagerZeroLens ChainGraphAfterWarmUp IotaGraphSmallAlloc; do
  timeout 60 compute-sanitizer --tool initcheck build-gpu/dspark_tests --gtest_filter="InitcheckProbeGpu.$t" \
    > "$out/probe-$t.log" 2>&1
  printf 'initcheck probe %-24s %s\n' "$t" "$(grep -h 'ERROR SUMMARY' "$out/probe-$t.log")"
done | tee "$out/probe-summary.txt"

rc=0
{
  for tool in $tools; do
    for log in "$out/$tool"-tests-*.log "$out/$tool-run.log"; do
      r=$(cat "${log%.log}.rc")
      summary=$(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)
      tests=$(grep -hE '^\[  (PASSED|FAILED)  \]|tests ran' "$log" | tr '\n' ' ')
      printf '%-10s %-22s rc=%-3s %s %s\n' "$tool" "$(basename "$log" .log)" "$r" "${summary:-(no summary)}" "$tests"
      [ "$r" = 0 ] || rc=1
    done
  done
} | tee "$out/summary.txt"
grep -q 'rc=[^0]' "$out/summary.txt" && rc=1
exit $rc
