#!/usr/bin/env bash
# Two dspark-sim binaries (a refactor's before and after) on the default workloads: their
# outputs byte for byte, and their CPU time side by side.
#   scripts/compare-outputs.sh BEFORE_BIN AFTER_BIN [OUT_DIR] [REPS]
#       (defaults: results/compare-outputs, 5 timing repetitions each)
# Outputs: `run --config workloads/default.cfg` with --jobs 1 and 2 (every file and the console),
# a small `sweep` (chat, concurrency 1 and 8, dspark and adaptive, every implementation, checked
# by every implementation) with --jobs 1 and 2, `verify` (its defaults, and --model v4) with its
# JSON, and `step` on every seed case and on workloads/examples/step_adaptive_verify.json. Both
# binaries run in folders of their own with the same relative paths, so argv matches. Masked
# before comparing (they measure this machine and this moment, not the simulation): JSON keys and
# CSV columns ending in wall_s or _utc, cpu_s and steps_per_s; the console's "simulator: ...
# wall ... CPU" figures; the source tree's git_sha and git_dirty (each binary reports the tree it
# finds); the output folders' lock files. Everything else must be equal. Both binaries read this
# tree as their source tree (DSPARK_SOURCE_ROOT: the bundled calibration, the git revision in a
# sweep's fingerprints); leave it alone while the script runs.
# Speed: `run --config workloads/default.cfg --jobs 1` (about 0.3 s of CPU: a coarse lane), and
# 300 requests of the Azure conversation trace checked (--jobs 1) and with --no-check, before
# and after alternately (back to back, REPS times each), user + system CPU seconds by GNU time;
# prints the medians and after / before. Exits 1 when an output differs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export DSPARK_SOURCE_ROOT=$root
[ $# -ge 2 ] || { sed -n 2,20p "$0" >&2; exit 2; }
before=$(realpath "$1")
after=$(realpath "$2")
out=$(realpath -m "${3:-results/compare-outputs}")
reps=${4:-5}
for b in "$before" "$after"; do [ -x "$b" ] || { echo "compare-outputs: no executable $b" >&2; exit 2; }; done
[ -x /usr/bin/time ] || { echo "compare-outputs: needs GNU time (/usr/bin/time)" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out/before" "$out/after"

# One command into NAME.log; its exit status into exit-codes.txt (compared too).
record() {  # NAME COMMAND...
  local name=$1 rc=0
  shift
  "$@" > "$name.log" 2>&1 || rc=$?
  echo "$name $rc" >> exit-codes.txt
}

outputs() {  # $1: binary; runs in the current folder
  local sim=$1 j c
  for j in 1 2; do
    record "run-j$j" "$sim" run --config "$root/workloads/default.cfg" --out "run-j$j" --progress none --jobs "$j"
    record "sweep-j$j" "$sim" sweep --workload chat --concurrency 1,8 --batch-size 16 --num-requests 16 \
      --mode dspark,adaptive --time-impl all --impl all --out "sweep-j$j" --progress none --jobs "$j"
  done
  record verify "$sim" verify --progress none --json verify.json
  record verify-v4 "$sim" verify --model v4 --progress none --json verify-v4.json
  for c in prefill chunked_prefill mixed decode verify adaptive_verify draft adaptive_draft; do
    record "step-$c" "$sim" step --case "$c" --out "step-$c.json"
  done
  record step-json "$sim" step --json "$root/workloads/examples/step_adaptive_verify.json" --out step-json.json
}

echo "compare-outputs: outputs of $before"
(cd "$out/before" && outputs "$before")
echo "compare-outputs: outputs of $after"
(cd "$out/after" && outputs "$after")

status=0
python3 - "$out/before" "$out/after" <<'EOF' || status=$?
import csv, io, json, os, re, sys

MASKED_KEYS = {"cpu_s", "steps_per_s", "git_sha", "git_dirty"}
SIMULATOR = re.compile(r"simulator: (\d+) steps in [0-9.]+ s wall = \d+ steps/s \([0-9.]+ s CPU = \d+ steps/s")


def masked(key):
    return key in MASKED_KEYS or key.endswith("wall_s") or key.endswith("_utc")


def mask_json(v):
    if isinstance(v, dict):
        return {k: ("<masked>" if masked(k) else mask_json(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [mask_json(x) for x in v]
    return v


def normalized(path):
    data = open(path, "rb").read()
    if path.endswith(".json"):
        try:
            return json.dumps(mask_json(json.loads(data)), indent=1).encode()
        except ValueError:
            return data
    if path.endswith(".jsonl"):
        lines = []
        for line in data.decode().splitlines():
            lines.append(json.dumps(mask_json(json.loads(line))) if line.strip() else line)
        return "\n".join(lines).encode()
    if path.endswith(".csv"):
        rows = list(csv.reader(io.StringIO(data.decode())))
        if rows:
            cols = [i for i, k in enumerate(rows[0]) if masked(k)]
            for row in rows[1:]:
                for i in cols:
                    if i < len(row):
                        row[i] = "<masked>"
        return json.dumps(rows).encode()
    if path.endswith(".log"):
        return SIMULATOR.sub(r"simulator: \1 steps in <masked>", data.decode()).encode()
    return data


def files(top):
    # .dspark-sim.lock: the running process's id and start, not an output
    return sorted(os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top) for f in fs
                  if f != ".dspark-sim.lock")


a, b = sys.argv[1], sys.argv[2]
fa, fb = files(a), files(b)
bad = 0
for f in sorted(set(fa) ^ set(fb)):
    print(f"compare-outputs: only in {'before' if f in fa else 'after'}: {f}")
    bad += 1
same = 0
for f in sorted(set(fa) & set(fb)):
    pa, pb = os.path.join(a, f), os.path.join(b, f)
    if open(pa, "rb").read() == open(pb, "rb").read():
        same += 1
    elif normalized(pa) == normalized(pb):
        same += 1
    else:
        print(f"compare-outputs: DIFFERS: {f}")
        bad += 1
print(f"compare-outputs: {same} files equal (timing and git fields masked), {bad} differ or are missing")
sys.exit(1 if bad else 0)
EOF

echo "compare-outputs: CPU seconds (user + system, GNU time), $reps runs each, before and after alternating"
cd "$out"
azure="--trace $root/workloads/traces/azure_llm_inference_conv_2023.csv --num-requests 300"
speed_cases=("default.cfg, checked|--config $root/workloads/default.cfg --jobs 1"
             "azure-conv-300, checked|$azure --jobs 1"
             "azure-conv-300, --no-check|$azure --no-check")
for entry in "${speed_cases[@]}"; do
  label=${entry%%|*}
  args=${entry#*|}
  : > before.times
  : > after.times
  for ((i = 0; i < reps; ++i)); do
    for side in before after; do
      bin=$before
      [ "$side" = after ] && bin=$after
      # shellcheck disable=SC2086
      /usr/bin/time -f '%U %S' -o "$side.time" "$bin" run $args --progress none --out "speed-$side" > /dev/null 2>&1
      awk '{print $1 + $2}' "$side.time" >> "$side.times"
    done
  done
  python3 - "$label" before.times after.times <<'EOF'
import statistics, sys
b = [float(x) for x in open(sys.argv[2])]
a = [float(x) for x in open(sys.argv[3])]
mb, ma = statistics.median(b), statistics.median(a)
print(f"| {sys.argv[1]} | before {mb:.3f} s | after {ma:.3f} s | after / before {ma / mb:.3f} |"
      f"  (before {' '.join(f'{x:.2f}' for x in b)}; after {' '.join(f'{x:.2f}' for x in a)})")
EOF
done
exit $status
