#!/usr/bin/env bash
# On the GPU machine: #47474's (a) -> (b) on DeepSeek-V4, the states as released: `bench --model v4`
# times vllm-0.24 (vLLM 0.24.0, state (a)) and vllm-0.27 (0.27.1, state (b)) beside vllm-0.29 on
# the seed's eight cases (batch 16, seed 4), and this script prints the (a) -> (b) ratio per case
# beside the PR's "5x-6x kernel performance improvement". Reports in $OUT (default
# results-bench-v4/): bench.json, bench.md, ratio-47474.md.
#
# Prepare here (no GPU): scripts/gpu-build.sh (build-gpu/); carry ["build-gpu"]; run there:
#   scripts/bench-v4-47474.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-results-bench-v4}"
SIM="${DSPARK_SIM:-build-gpu/dspark-sim}"
[ -x "$SIM" ] || { echo "bench-v4-47474: $SIM: not found (scripts/gpu-build.sh, carry build-gpu)" >&2; exit 2; }
mkdir -p "$OUT"
"$SIM" bench --model v4 --no-tpot --batch 16 --seed 4 --impl vllm-0.24,vllm-0.27,vllm-0.29 --out "$OUT" \
  >"$OUT/bench.md" 2>"$OUT/bench.log" || { echo "bench-v4-47474: bench exited $? (see $OUT/bench.log)" >&2; exit 1; }
python3 - "$OUT/bench.json" >"$OUT/ratio-47474.md" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
rows = j["metadata"]  # one object per (case, implementation, method)
by = {}
for r in rows:
    by[(r["case"], r["method"], r["impl"])] = r
cases = sorted({k[0] for k in by}, key=lambda c: [r["case"] for r in rows].index(c))
methods = sorted({k[1] for k in by})
print("# #47474 on DeepSeek-V4: (a) vllm-0.24 (vLLM 0.24.0) -> (b) vllm-0.27 (vLLM 0.27.1)\n")
print("The PR's figure: \"5x-6x kernel performance improvement\" (a microbenchmark of the mapping).\n")
for m in methods:
    print(f"## method: {m}\n")
    print("| case | (a) µs | (b) µs | (a) -> (b) | launches (a) / (b) | (c) vllm-0.29 µs |")
    print("|---|---:|---:|---:|---|---:|")
    for c in cases:
        a, b, cc = (by.get((c, m, i)) for i in ("vllm-0.24", "vllm-0.27", "vllm-0.29"))
        if not a or not b:
            continue
        ratio = a["gpu_us_median"] / b["gpu_us_median"] if b["gpu_us_median"] > 0 else float("nan")
        print(f"| {c} | {a['gpu_us_median']:.1f} | {b['gpu_us_median']:.1f} | {ratio:.2f}x | "
              f"{a['launches']} / {b['launches']} | {cc['gpu_us_median']:.1f} |" if cc else
              f"| {c} | {a['gpu_us_median']:.1f} | {b['gpu_us_median']:.1f} | {ratio:.2f}x | "
              f"{a['launches']} / {b['launches']} | |")
    print()
PY
cat "$OUT/ratio-47474.md"
