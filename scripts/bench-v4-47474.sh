#!/usr/bin/env bash
# On the GPU machine: #47474's (a) -> (b) on DeepSeek-V4, the states as released: `bench --model v4`
# times vllm-0.24 (vLLM 0.24.0, state (a)) and vllm-0.27 (0.27.1, state (b)) beside vllm-0.29 on
# the seed's eight cases (batch 16, seed 4), and this script prints the (a) -> (b) ratio per case
# beside the PR's "5x-6x kernel performance improvement". Where the packed release trees are there
# (.vllm-packs/0.24.0.tar.gz and 0.27.1.tar.gz, scripts/oracle/pack-vllm.sh) and python3 imports
# torch, the oracle also times the releases' own DeepSeek-V4 builders on the same eight cases
# (eager, cold L2, CUDA events: scripts/oracle/oracle_v4.py) and their ratio stands beside ours.
# Reports in $OUT (default results-bench-v4/): bench.json, bench.md, ratio-47474.md and, with the
# releases, oracle-v4-VERSION.json.
#
# Prepare here (no GPU): scripts/gpu-build.sh (build-gpu/); carry ["build-gpu", ".vllm-packs"]; run there:
#   scripts/bench-v4-47474.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-results-bench-v4}"
SIM="${DSPARK_SIM:-build-gpu/dspark-sim}"
PACKS="${DSPARK_VLLM_PACKS:-.vllm-packs}"
[ -x "$SIM" ] || { echo "bench-v4-47474: $SIM: not found (scripts/gpu-build.sh, carry build-gpu)" >&2; exit 2; }
mkdir -p "$OUT"
"$SIM" bench --model v4 --no-tpot --batch 16 --seed 4 --impl vllm-0.24,vllm-0.27,vllm-0.29 --out "$OUT" \
  >"$OUT/bench.md" 2>"$OUT/bench.log" || { echo "bench-v4-47474: bench exited $? (see $OUT/bench.log)" >&2; exit 1; }

# The releases' own code on the same cases, timed by the oracle (skipped, and said so, without them).
releases=()
if [ -f "$PACKS/0.24.0.tar.gz" ] && [ -f "$PACKS/0.27.1.tar.gz" ] && python3 -c 'import torch, triton' 2>/dev/null; then
  work="$(mktemp -d "${TMPDIR:-/tmp}/dspark-bench-v4.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  export DSPARK_VLLM_CACHE="$work/vllm" TRITON_CACHE_DIR="$work/triton"
  mkdir -p "$DSPARK_VLLM_CACHE"
  for pair in 0.24.0=vllm-0.24 0.27.1=vllm-0.27; do
    v="${pair%%=*}"; impl="${pair#*=}"
    tar -xzf "$PACKS/$v.tar.gz" -C "$DSPARK_VLLM_CACHE"
    mkdir -p "$work/seed-$impl"
    for c in prefill chunked_prefill mixed decode verify adaptive_verify draft adaptive_draft; do
      "$SIM" step --model v4 --case "$c" --batch 16 --seed 4 --impl "$impl" --out "$work/seed-$impl/$c.json" >/dev/null
    done
    python3 scripts/oracle/vllm_oracle.py --release "$v" --model v4 --device cuda --impl "$impl" --sim "$SIM" \
      --steps "$work/seed-$impl"/*.json --out "$OUT/oracle-v4-$v.json" >"$OUT/oracle-v4-$v.log" 2>&1 &&
      releases+=("$OUT/oracle-v4-$v.json") || echo "bench-v4-47474: the oracle on $v exited $? (see $OUT/oracle-v4-$v.log)" >&2
  done
else
  echo "bench-v4-47474: no $PACKS/0.24.0.tar.gz and 0.27.1.tar.gz, or no torch: the releases' own timing is left out" >&2
fi

python3 - "$OUT/bench.json" "${releases[@]}" >"$OUT/ratio-47474.md" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
rows = j["metadata"]  # one object per (case, implementation, method)
by = {}
for r in rows:
    by[(r["case"], r["method"], r["impl"])] = r
cases = sorted({k[0] for k in by}, key=lambda c: [r["case"] for r in rows].index(c))
methods = sorted({k[1] for k in by})
# The releases' own builders, timed by the oracle: release -> bench case -> median µs.
step_case = {"prefill": "prefill", "chunked_prefill": "chunked_prefill", "mixed": "mixed", "decode": "decode",
             "verify": "dspark_verify", "adaptive_verify": "dspark_adaptive_verify", "draft": "dspark_draft",
             "adaptive_draft": "dspark_adaptive_draft"}
rel = {}
for path in sys.argv[2:]:
    o = json.load(open(path))
    t = rel.setdefault(o["meta"]["release"], {})
    for row in o.get("per_step", []):
        name, timing = row.get("step", ""), row.get("release_time", {})
        if name.endswith(".json") and name[:-5] in step_case and "median_us" in timing:
            t[step_case[name[:-5]]] = timing["median_us"]
a_rel, b_rel = rel.get("0.24.0", {}), rel.get("0.27.1", {})
print("# #47474 on DeepSeek-V4: (a) vllm-0.24 (vLLM 0.24.0) -> (b) vllm-0.27 (vLLM 0.27.1)\n")
print("The PR's figure: \"5x-6x kernel performance improvement\" (a microbenchmark of the mapping).\n")
if rel:
    print("\"Releases' own\": vLLM 0.24.0's and 0.27.1's DeepSeek-V4 builders on the same cases, run eagerly")
    print("by the oracle (scripts/oracle/oracle_v4.py, cold L2, CUDA events around the Python builders).\n")
for m in methods:
    print(f"## method: {m}\n")
    extra = " releases' own (a) µs | (b) µs | (a) -> (b) |" if rel else ""
    print("| case | (a) µs | (b) µs | (a) -> (b) | launches (a) / (b) | (c) vllm-0.29 µs |" + extra)
    print("|---|---:|---:|---:|---|---:|" + ("---:|---:|---:|" if rel else ""))
    for c in cases:
        a, b, cc = (by.get((c, m, i)) for i in ("vllm-0.24", "vllm-0.27", "vllm-0.29"))
        if not a or not b:
            continue
        ratio = a["gpu_us_median"] / b["gpu_us_median"] if b["gpu_us_median"] > 0 else float("nan")
        line = (f"| {c} | {a['gpu_us_median']:.1f} | {b['gpu_us_median']:.1f} | {ratio:.2f}x | "
                f"{a['launches']} / {b['launches']} | {cc['gpu_us_median']:.1f} |" if cc else
                f"| {c} | {a['gpu_us_median']:.1f} | {b['gpu_us_median']:.1f} | {ratio:.2f}x | "
                f"{a['launches']} / {b['launches']} | |")
        if rel:
            ra, rb = a_rel.get(c), b_rel.get(c)
            line += (f" {ra:.1f} | {rb:.1f} | {ra / rb:.2f}x |" if ra and rb else " | | |")
        print(line)
    print()
PY
cat "$OUT/ratio-47474.md"
