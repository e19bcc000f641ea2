#!/usr/bin/env bash
# Slim packs of fetched vLLM releases for the GPU machine's carry (64 MiB in all, with the build).
#
#   scripts/oracle/pack-vllm.sh OUTDIR VERSION...      e.g. .vllm-packs 0.29.0 0.30.0 0.31.0 0.34.0
#   scripts/oracle/pack-vllm.sh .vllm-packs 0.24.0 0.27.1 0.29.0   (DeepSeek-V4's (a)-(c): scripts/gpu-oracle-v4.sh)
#
# A whole release tree packs to 6-12 MB; six of them beside build-gpu/ do not fit one carry. The
# oracle (vllm_oracle.py) and the adaptive-verification check (check_av.py) import modules from
# the folders below only (found by tracing sys.modules over every release from 0.24.0 to 0.34.0).
# Each pack holds every .py of those folders, and the metadata folders whole (subfolders
# included) as a margin for imports a GPU run makes inside functions. OUTDIR/VERSION.tar.gz has
# the layout of the full pack (VERSION/vllm/...), so scripts/gpu-oracle.sh unpacks either.
# The trees come from $DSPARK_VLLM_CACHE (default <repo>/.vllm-cache; scripts/fetch-vllm.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${DSPARK_VLLM_CACHE:-$here/.vllm-cache}"
if [ $# -lt 2 ]; then
  echo "usage: $0 OUTDIR VERSION... (trees from \$DSPARK_VLLM_CACHE = $cache)" >&2
  exit 2
fi
out="$1"; shift

# Folders whose own .py files go in (not their subfolders).
FLAT=(vllm vllm/compilation vllm/device_allocator vllm/logging_utils vllm/model_executor
      vllm/model_executor/determinism vllm/model_executor/kernels vllm/model_executor/layers
      vllm/model_executor/layers/fusion vllm/model_executor/offloader vllm/model_executor/warmup
      vllm/models vllm/plugins vllm/third_party vllm/v1 vllm/v1/worker vllm/v1/worker/gpu)
# Folders that go in whole.
WHOLE=(vllm/platforms vllm/triton_utils vllm/utils vllm/v1/attention vllm/v1/worker/gpu/spec_decode
       vllm/models/deepseek_v4 vllm/models/deepseek_v41)

mkdir -p "$out"
for v in "$@"; do
  tree="$cache/$v"
  [ -f "$tree/vllm/__init__.py" ] || { echo "pack-vllm: $tree: no release tree (scripts/fetch-vllm.sh $v)" >&2; exit 2; }
  list="$(mktemp)"
  trap 'rm -f "$list"' EXIT
  (
    cd "$cache"
    for d in "${FLAT[@]}"; do if [ -d "$v/$d" ]; then find "$v/$d" -maxdepth 1 -name "*.py"; fi; done
    for d in "${WHOLE[@]}"; do if [ -d "$v/$d" ]; then find "$v/$d" -name "*.py"; fi; done
  ) | sort -u > "$list"
  tar -C "$cache" -czf "$out/$v.tar.gz.tmp" -T "$list"
  mv "$out/$v.tar.gz.tmp" "$out/$v.tar.gz"
  echo "pack-vllm: $v: $(wc -l < "$list") files -> $out/$v.tar.gz ($(du -h "$out/$v.tar.gz" | cut -f1))"
  rm -f "$list"
  trap - EXIT
done
