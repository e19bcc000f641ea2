#!/usr/bin/env bash
# Fetches released vLLM source trees for the oracle (scripts/oracle/), never into the repository.
#
#   scripts/fetch-vllm.sh 0.31.0 0.34.0 ...
#
# For each VERSION: `pip download --no-deps vllm==VERSION` into a temporary folder, extract only
# vllm/**/*.py into $DSPARK_VLLM_CACHE/VERSION/, delete the wheel, and pack the tree as
# $DSPARK_VLLM_CACHE/VERSION.tar.gz (7-16 MB) for carrying to a GPU machine, where
# scripts/gpu-oracle.sh unpacks it. A version whose tree and pack already exist is skipped.
#
# DSPARK_VLLM_CACHE defaults to <repo>/.vllm-cache (ignored by git). DSPARK_VLLM_WHEELS, if set,
# is a folder searched first for an already downloaded vllm-VERSION-*.whl; such a wheel is read
# in place and left there (only wheels this script downloads are deleted).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${DSPARK_VLLM_CACHE:-$here/.vllm-cache}"

if [ $# -eq 0 ]; then
  echo "usage: $0 VERSION... (e.g. 0.31.0 0.34.0); trees go to \$DSPARK_VLLM_CACHE ($cache)" >&2
  exit 2
fi
for v in "$@"; do
  if ! [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+([.a-z0-9]*)$ ]]; then
    echo "fetch-vllm: '$v' is not a release version (expected e.g. 0.34.0)" >&2
    exit 2
  fi
done
mkdir -p "$cache"

extract_py() {  # wheel dest: copy vllm/**/*.py out of the wheel (a zip) into dest/vllm/...
  python3 - "$1" "$2" <<'PY'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
n = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if not (name.startswith("vllm/") and name.endswith(".py")) or ".." in name.split("/"):
            continue
        out = os.path.join(dest, name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(info) as src, open(out, "wb") as dst:
            dst.write(src.read())
        n += 1
if n == 0:
    sys.exit(f"fetch-vllm: {wheel} holds no vllm/*.py files")
print(f"fetch-vllm: {n} .py files from {os.path.basename(wheel)}")
PY
}

for v in "$@"; do
  tree="$cache/$v"
  pack="$cache/$v.tar.gz"
  if [ -f "$tree/vllm/__init__.py" ] && [ -f "$pack" ]; then
    echo "fetch-vllm: $v already in $cache"
    continue
  fi
  tmp="$(mktemp -d "$cache/.fetch-$v.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  wheel=""
  if [ -n "${DSPARK_VLLM_WHEELS:-}" ]; then
    wheel="$(ls "$DSPARK_VLLM_WHEELS"/vllm-"$v"-*.whl 2>/dev/null | head -n1 || true)"
  fi
  downloaded=0
  if [ -z "$wheel" ]; then
    echo "fetch-vllm: downloading vllm==$v"
    python3 -m pip download -q --no-deps --only-binary=:all: "vllm==$v" -d "$tmp/wheel"
    wheel="$(ls "$tmp"/wheel/vllm-*.whl | head -n1)"
    downloaded=1
  fi
  rm -rf "$tmp/tree"
  extract_py "$wheel" "$tmp/tree/$v"
  [ "$downloaded" = 1 ] && rm -f "$wheel"
  rm -rf "$tree"
  mv "$tmp/tree/$v" "$tree"
  tar -C "$cache" -czf "$tmp/$v.tar.gz" "$v"
  mv "$tmp/$v.tar.gz" "$pack"
  rm -rf "$tmp"
  trap - EXIT
  echo "fetch-vllm: $v -> $tree ($(du -sh "$pack" | cut -f1) packed)"
done
