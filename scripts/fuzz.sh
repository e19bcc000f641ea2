#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang into build-fuzz/ and runs each one for a
# bounded time, one after the other, then prints a summary per target.
#
#   scripts/fuzz.sh [seconds_per_target] [target...]     (default 60 s, every target)
#
# Each target starts from its committed seeds (tests/fuzz/corpus/<target>/) and regressions
# (tests/fuzz/regressions/<target>/) plus what earlier runs of this script found
# ($out/corpus/<target>/). A crash, hang or memory blow-up stops that target and lands in
# $out/crashes/<target>/; replay one with build-fuzz/fuzz_<target> FILE. Copy the input into
# tests/fuzz/regressions/<target>/ with the fix, so the normal tests replay it.
#
# batch_layout is the differential target over batch layouts (tests/fuzz/layout_gen.h,
# layout_check.h): each input is 1-3 layouts that every registered implementation runs in CPU
# emulation against the references; a bug cell, a stale-host or padding-residue cell its traits do
# not allow, or a crash stops it with the layout printed. Its seeded CI form is
# `dspark_tests --gtest_filter=FuzzLayouts.*`; the GPU form `FuzzLayoutsGpu.*` (CUDA build).
#   scripts/fuzz.sh 300 batch_layout
#
# The command lines themselves have their own fuzz target, scripts/fuzz-cli.py (every command,
# random option sets, run against a built dspark-sim; no clang needed):
#   scripts/fuzz-cli.py --minutes 10        # 10 minutes per command
#
# Environment: DSPARK_FUZZ_BUILD_DIR (build-fuzz), DSPARK_FUZZ_OUT ($build/fuzz-out),
# DSPARK_FUZZ_JOBS (build parallelism, 1), DSPARK_FUZZ_RSS_MB (2048), DSPARK_FUZZ_TIMEOUT_S (10,
# a single input running longer is a hang).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
build=${DSPARK_FUZZ_BUILD_DIR:-build-fuzz}
out=${DSPARK_FUZZ_OUT:-$build/fuzz-out}
jobs=${DSPARK_FUZZ_JOBS:-1}
rss_mb=${DSPARK_FUZZ_RSS_MB:-2048}
timeout_s=${DSPARK_FUZZ_TIMEOUT_S:-10}

all_targets=()
for main in tests/fuzz/fuzz_*.cc; do
  name=$(basename "$main" .cc)
  [ "$name" = fuzz_targets ] && continue
  all_targets+=("${name#fuzz_}")
done
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [ -f "tests/fuzz/fuzz_$t.cc" ] || { echo "fuzz: no target '$t' (have: ${all_targets[*]})" >&2; exit 2; }
done

# libFuzzer ships with clang's compiler-rt (Debian: clang and libclang-rt-<version>-dev).
if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: installing clang"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang >/dev/null
fi
if ! ls "$(clang++ -print-resource-dir)"/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  version=$(clang++ -dumpversion | cut -d. -f1)
  echo "fuzz: installing libclang-rt-$version-dev (libFuzzer)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "libclang-rt-$version-dev" >/dev/null
fi

CC=clang CXX=clang++ cmake -S . -B "$build" -DDSPARK_FUZZ=ON -DDSPARK_ENABLE_CUDA=OFF \
  -DDSPARK_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=(--target "fuzz_$t"); done
cmake --build "$build" -j"$jobs" "${build_targets[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$out/logs"
summary=()
failed=0
for t in "${targets[@]}"; do
  corpus="$out/corpus/$t"
  crashes="$out/crashes/$t"
  log="$out/logs/$t.log"
  mkdir -p "$corpus" "$crashes"
  seeds=(tests/fuzz/corpus/"$t")
  [ -d "tests/fuzz/regressions/$t" ] && seeds+=("tests/fuzz/regressions/$t")
  before=$(find "$crashes" -type f | wc -l)
  echo "fuzz: $t for ${seconds}s (log $log)"
  rc=0
  # New inputs go to the first folder only; the committed seeds are read, never written.
  "$build/fuzz_$t" "$corpus" "${seeds[@]}" -max_total_time="$seconds" -timeout="$timeout_s" \
    -rss_limit_mb="$rss_mb" -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$crashes/" >"$log" 2>&1 || rc=$?
  after=$(find "$crashes" -type f | wc -l)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  units=$(find "$corpus" -type f | wc -l)
  status=ok
  if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
    status="FOUND (rc $rc): $(grep -m1 -E 'ERROR: libFuzzer|ERROR: AddressSanitizer|runtime error|fuzz invariant violated|ALARM' "$log" || echo 'see log')"
    failed=1
  fi
  summary+=("$(printf '%-20s %10s %8s %7s %7s %7s %8s  %s' "$t" "${execs:-?}" "${speed:-?}" \
    "${cov:-?}" "${ft:-?}" "$units" "$((after - before))" "$status")")
done

echo
printf '%-20s %10s %8s %7s %7s %7s %8s  %s\n' target execs exec/s cov ft corpus crashes status
printf '%s\n' "${summary[@]}"
echo "fuzz: crashes and hangs are in $out/crashes/<target>/, logs in $out/logs/"
exit "$failed"
