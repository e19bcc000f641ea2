#!/usr/bin/env bash
# The host code under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer included):
# a CPU-only build in build-asan/ (or $DSPARK_ASAN_BUILD_DIR), then the whole CTest suite there:
# every CPU test and the plot test (the GPU tests are not built without nvcc). Any sanitizer
# report aborts the process that made it, so its test fails and this script exits non-zero.
# Extra arguments go to ctest (e.g. -R Sweep). The 'asan' CMake preset is the same build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
build=${DSPARK_ASAN_BUILD_DIR:-build-asan}

# Debug (-O0 -g): a third of the compile time of -O2 -g under ASan+UBSan, and the suite runs
# only about 1.5x longer. float-cast-overflow is UB that GCC's 'undefined' group leaves out.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DDSPARK_ENABLE_CUDA=OFF \
  -DDSPARK_SANITIZE=address,undefined,float-cast-overflow >/dev/null

# Exported before the build too: gtest_discover_tests runs dspark_tests at build time.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:print_stacktrace=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

cmake --build "$build" -j"$(nproc)"
# new_impl_scaffold (label newimpl) builds an unsanitized copy of the tree: scripts/test.sh runs it.
# With arguments: those CTest cases, one process each, as CTest runs them.
if [ $# -gt 0 ]; then
  exec ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -LE newimpl "$@"
fi

# Every GoogleTest case of dspark_tests, in 4 x nproc shard processes, nproc at a time. CTest's one
# process per case spent most of the suite's time starting ASan-instrumented processes and scanning
# them for leaks at exit (1,490 of them). A report aborts its shard (halt_on_error), so the shard
# and this script fail; the shard's log is printed.
shards=$(( 4 * $(nproc) ))
logs="$(cd "$build" && pwd)/sanitize-shards"; rm -rf "$logs"; mkdir -p "$logs"
seq 0 $((shards - 1)) | xargs -P "$(nproc)" -I{} bash -c \
  'cd "$0" && GTEST_TOTAL_SHARDS=$1 GTEST_SHARD_INDEX={} timeout 3600 ./dspark_tests --gtest_brief=1 \
     > "$2/shard-{}.log" 2>&1; echo $? > "$2/shard-{}.rc"' "$build" "$shards" "$logs" || true
rc=0
for ((i = 0; i < shards; ++i)); do
  if [ "$(cat "$logs/shard-$i.rc" 2>/dev/null)" != 0 ]; then
    echo "test-sanitize: shard $i of $shards failed (rc $(cat "$logs/shard-$i.rc" 2>/dev/null)):" >&2
    tail -60 "$logs/shard-$i.log" >&2
    rc=1
  fi
done
ran=$(cat "$logs"/shard-*.log | grep -hoE '^\[==========\] [0-9]+ tests? from' | awk '{s += $2} END {print s + 0}')
# Every case CTest knows must have run in some shard: a shard that silently ran nothing fails too.
expected=$(ctest --test-dir "$build" -N -L gtest | awk '/Total Tests:/ {print $3}')
if [ "$ran" != "$expected" ]; then
  echo "test-sanitize: the shards ran $ran GoogleTest cases, CTest lists $expected" >&2
  rc=1
fi
echo "test-sanitize: $ran GoogleTest cases in $shards shards, $( [ $rc = 0 ] && echo clean || echo FAILED )"
# The script tests (plots, step replay, layering): through CTest.
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -LE 'newimpl|gtest' || rc=1
exit $rc
