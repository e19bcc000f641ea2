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
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -LE newimpl "$@"
