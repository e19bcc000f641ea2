#!/usr/bin/env bash
# There (on the H200 machine): compute-sanitizer memcheck, racecheck, initcheck and synccheck over
# every GPU test of the test binary and over a short `dspark-sim run --executor gpu`. Every tool
# runs sharded and in parallel (each instrumented process is CPU-bound; the GPU is shared), so the
# whole matrix fits one device call. Logs go to $OUT/sanitize (or ./gpu-out/sanitize); the
# summary lines go to stdout and to summary.txt. Exit status: 0 only when every run is clean.
#   SANITIZE_TOOLS="memcheck racecheck initcheck synccheck"  SANITIZE_SHARDS=2  SANITIZE_TIMEOUT=400
#   SANITIZE_HEAVY_TOOLS="memcheck initcheck"   (tools that also run the whole-workload tests; "" for none)
#   SANITIZE_FILTER=GTEST_FILTER               (only these tests, e.g. the kernels a change touched)
set -uo pipefail
cd "$(dirname "$0")/.."
source build-gpu/env.sh
out=${OUT:-gpu-out}/sanitize; mkdir -p "$out"
tools=${SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}
shards=${SANITIZE_SHARDS:-2}
limit=${SANITIZE_TIMEOUT:-400}
# The GPU tests: every suite defined in tests/*/*.cu (a few of them are host-only and cost little).
# Left out: TpotLoop.ForwardStandInLastsWhatItIsAskedTo asserts a duration, which
# instrumentation stretches; GpuFaultInjection.* issues a failing CUDA call on purpose;
# GpuFaults.SizesBeyond* allocates ~42 GiB and GpuFaults.ACapacityBeyond* takes nearly all device
# memory, which parallel instrumented shards cannot share.
# Apart, below: the initcheck probe (tools/, build-gpu/dspark_initcheck_probe), which
# reproduces the tool's report on a graph's first replay; its error counts are printed as evidence.
suites=$(grep -ohE '^(TEST|TEST_P|TEST_F)\((\w+),' tests/*/*.cu | sed -E 's/.*\((\w+),/\1/' | sort -u)
positive=$(for s in $suites; do printf '*%s.*:' "$s"; done)
filter=${SANITIZE_FILTER:-"${positive%:}:-TpotLoop.ForwardStandInLastsWhatItIsAskedTo:GpuFaultInjection.*:GpuFaults.SizesBeyond*:GpuFaults.ACapacityBeyond*"}
run_cfg=(run --workload batch1-512 --num-requests 2 --executor gpu --impl fused,fused-suite,chain --no-check)

# The tests that run whole workloads (executor, bench, TPOT loop, calibration) take minutes each
# under a sanitizer: they get processes of their own under memcheck and initcheck. racecheck and
# synccheck see the same kernels in the other tests and the executor in the short run.
heavy_groups=('GpuExecutor.AdaptiveRunExactForDeviceImplsStaleForHostImpls'
              'GpuExecutor.*:-GpuExecutor.AdaptiveRunExactForDeviceImplsStaleForHostImpls'
              'Bench.*:TpotLoop.*:DeviceTopB.*:Calibration.*:GpuFaults.ThePlanIsExactlyWhatTheExecutorAllocates:-TpotLoop.ForwardStandInLastsWhatItIsAskedTo')
heavy_all='GpuExecutor.*:Bench.*:TpotLoop.*:DeviceTopB.*:Calibration.*:GpuFaults.ThePlanIsExactlyWhatTheExecutorAllocates'
heavy_tools=${SANITIZE_HEAVY_TOOLS-memcheck initcheck}  # set it empty for none

pids=()
job() {  # job NAME TOOL ARGS...: one instrumented process, its log and exit status in $out
  local name=$1 tool=$2; shift 2
  local extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  ( timeout "$limit" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 9 "$@" > "$out/$name.log" 2>&1
    echo $? > "$out/$name.rc" ) &
  pids+=($!)
}
for tool in $tools; do
  # A narrowed SANITIZE_FILTER runs only what it names, in one process per tool (shards of a few
  # tests would be left empty, and a sanitized process that runs no kernel exits 255).
  if [ -n "${SANITIZE_FILTER:-}" ]; then f="$filter"; n=1; else f="$filter:$heavy_all"; n=$shards; fi
  [ "$tool" = racecheck ] && [ -z "${SANITIZE_FILTER:-}" ] && n=$((shards + 1))
  for ((s = 0; s < n; ++s)); do
    GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$s job "$tool-tests-$s" "$tool" build-gpu/dspark_tests --gtest_filter="$f" --gtest_brief=1
  done
  if [ -z "${SANITIZE_FILTER:-}" ] && [[ " $heavy_tools " == *" $tool "* ]]; then
    for ((g = 0; g < ${#heavy_groups[@]}; ++g)); do
      job "$tool-tests-heavy-$g" "$tool" build-gpu/dspark_tests --gtest_filter="${heavy_groups[$g]}" --gtest_brief=1
    done
  fi
  job "$tool-run" "$tool" build-gpu/dspark-sim "${run_cfg[@]}" --out "$out/run-$tool"
done
wait "${pids[@]}"

# The initcheck probe, each case alone in its own process: error counts, not pass/fail.
for t in ChainGraphZeroLens ChainGraph6x64 ChainEagerZeroLens ChainGraphAfterWarmUp IotaGraphSmallAlloc; do
  timeout 60 compute-sanitizer --tool initcheck build-gpu/dspark_initcheck_probe --gtest_filter="InitcheckProbeGpu.$t" \
    > "$out/probe-$t.log" 2>&1
  printf 'initcheck probe %-24s %s\n' "$t" "$(grep -h 'ERROR SUMMARY' "$out/probe-$t.log")"
done | tee "$out/probe-summary.txt"

rc=0
{
  for tool in $tools; do
    for log in "$out/$tool"-tests-*.log "$out/$tool-run.log"; do
      [ -f "$log" ] || continue
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
