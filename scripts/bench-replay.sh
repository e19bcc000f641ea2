#!/usr/bin/env bash
# Replay speed of the shipped traces: for each, `run` with the metadata check on (every
# implementation, the default) and with --no-check; prints steps, steps/s, wall, CPU and peak
# RSS (GNU time) as a markdown table.
#   scripts/bench-replay.sh [BUILD_DIR] [OUT_DIR]      (defaults: build-cpu, results/bench-replay)
# DSPARK_BENCH_TRACES="name|args;..." replaces the trace list; DSPARK_BENCH_JOBS sets --jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cpu}
out=${2:-results/bench-replay}
sim="$build/dspark-sim"
[ -x "$sim" ] || { echo "bench-replay: no $sim (build it: scripts/build-sim.sh)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-replay: needs GNU time (/usr/bin/time) for the peak RSS" >&2; exit 2; }
mkdir -p "$out"
default_traces="default|--config workloads/default.cfg"
default_traces+=";azure-conv-300|--trace workloads/traces/azure_llm_inference_conv_2023.csv --num-requests 300"
default_traces+=";splitwise-conv|--trace workloads/traces/vidur_splitwise_conv.csv"
default_traces+=";azure-code|--trace workloads/traces/azure_llm_inference_code_2023.csv"
default_traces+=";mooncake-128k|--trace workloads/traces/mooncake_style_long_context.jsonl --max-model-len 131072 --over-length skip"
IFS=';' read -r -a traces <<< "${DSPARK_BENCH_TRACES:-$default_traces}"
jobs=()
[ -n "${DSPARK_BENCH_JOBS:-}" ] && jobs=(--jobs "$DSPARK_BENCH_JOBS")
echo "| trace | check | steps | steps/s | wall [s] | CPU [s] | peak RSS [MB] |"
echo "|---|---|---:|---:|---:|---:|---:|"
for entry in "${traces[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  for check in check no-check; do
    dir="$out/$name-$check"
    extra=()
    [ "$check" = no-check ] && extra=(--no-check)
    # shellcheck disable=SC2086
    if ! /usr/bin/time -f '%e %U %S %M' -o "$dir.time" "$sim" run $args "${extra[@]}" "${jobs[@]}" \
         --progress none --out "$dir" > "$dir.log" 2>&1; then
      echo "| $name | $check | failed: see $dir.log | | | | |"
      continue
    fi
    read -r wall user sys rss < <(tail -n 1 "$dir.time")
    steps=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metrics']['steps']['total'])" \
            "$dir/summary.json")
    python3 - "$name" "$check" "$steps" "$wall" "$user" "$sys" "$rss" <<'EOF'
import sys
name, check, steps, wall, user, sys_, rss = sys.argv[1:]
steps, wall, cpu, rss = int(steps), float(wall), float(user) + float(sys_), int(rss)
print(f"| {name} | {check} | {steps:,} | {steps / max(wall, 1e-9):,.0f} | {wall:.2f} | {cpu:.2f} | {rss / 1024:.0f} |")
EOF
  done
done
