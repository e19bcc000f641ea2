#!/usr/bin/env bash
# CTest `new_impl_scaffold` (label newimpl): scripts/new-impl.sh in a scratch copy of the tree,
# a CPU-only build of that copy (dspark-sim only; ccache makes the unchanged files hits), then
# `verify`, `run` and `bench` with --impl NAME, without editing any existing file.
# Usage: tests/scripts/new_impl_test.sh SOURCE_DIR SCRATCH_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
name=probe-impl
rm -rf "$work"
mkdir -p "$work/src"
# The working tree as git sees it (tracked and untracked, not ignored), or all but build folders.
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -co --exclude-standard -z) |
    (cd "$src" && while IFS= read -r -d '' f; do [[ -f $f ]] && printf '%s\0' "$f"; done) |
    (cd "$src" && xargs -0 cp --parents -t "$work/src")
else
  (cd "$src" && tar --exclude='./build*' -cf - .) | (cd "$work/src" && tar -xf -)
fi
"$work/src/scripts/new-impl.sh" "$name"
test -f "$work/src/kernels/impls/probe_impl.cu"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# Unoptimised (-O0, no debug info): the copy only has to build and answer a few tiny commands, and
# -O0 compiles in about a third of -O3's time (CI builds it with nothing cached).
cmake -S "$work/src" -B "$work/src/build-cpu" -DDSPARK_ENABLE_CUDA=OFF -DDSPARK_BUILD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 "${launcher[@]}" >/dev/null
cmake --build "$work/src/build-cpu" -j2 --target dspark-sim >/dev/null
sim="$work/src/build-cpu/dspark-sim"
"$sim" verify --help | grep -q "$name"
"$sim" verify --impl "$name" --batch 3,16 --seeds 2 --json "$work/verify.json"
grep -q "\"$name\"" "$work/verify.json"
"$sim" run --workload batch1-512 --num-requests 1 --mode none --impl "$name" --time-impl "$name" \
  --out "$work/run"
test -s "$work/run/summary.json"
grep -q "$name" "$work/run/summary.json"
# bench needs a GPU; on a CPU-only build it must know the name and say only that the GPU is missing.
set +e
"$sim" bench --impl "$name" 2>"$work/bench.err"
rc=$?
"$sim" bench --impl nope-impl 2>"$work/bench_bad.err"
rc_bad=$?
set -e
if grep -q "expected an implementation" "$work/bench.err"; then
  echo "new_impl_test: bench does not know $name" >&2; cat "$work/bench.err" >&2; exit 1
fi
grep -q "expected an implementation" "$work/bench_bad.err"
[[ $rc -eq 0 || $rc -eq 2 ]] && [[ $rc_bad -eq 2 ]]
echo "new_impl_test: $name scaffolded, built, verified, run and known to bench"
