#!/usr/bin/env bash
# There (on the H200 machine, after scripts/gpu-build.sh): the typed results on the GPU path.
# The GPU executor's tests, one `run --executor gpu` and one `sweep --executor gpu`, and a check
# that each sweep row's stale_host / padding_residue / bug equal the steps with a difference of
# its point's summary.json (gpu_executor.impls.<impl>.steps_with), as for the CPU check.
# Logs and outputs go to $OUT (or ./gpu-out/results). Usage: scripts/gpu-results-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source build-gpu/env.sh
out=${OUT:-gpu-out}/results; rm -rf "$out"; mkdir -p "$out"
rc=0
build-gpu/dspark_tests --gtest_brief=1 --gtest_filter='GpuExecutor*:*Gpu*Fault*:SuiteGpu*:GpuCheck*' 2>&1 \
  | tee "$out/tests.log" | tail -5
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
build-gpu/dspark-sim run --executor gpu --workload speed-8k --num-requests 6 --concurrency 2 --no-check \
  --progress none --out "$out/run" > "$out/run.txt" 2>&1 || { echo "run --executor gpu failed"; rc=1; }
build-gpu/dspark-sim sweep --executor gpu --workload speed-8k --concurrency 1,4 --num-requests 4 \
  --mode adaptive --progress none --out "$out/sweep" > "$out/sweep.txt" 2>&1 || { echo "sweep --executor gpu failed"; rc=1; }
python3 - "$out" <<'PY' || rc=1
import json, os, sys
out = sys.argv[1]
s = json.load(open(os.path.join(out, "run", "summary.json")))
dev = s["gpu_executor"]["device"]
assert "device_ordinal" in dev and "clocks" in dev, f"gpu_executor.device is not the meta block's: {sorted(dev)}"
rows = [json.loads(l) for l in open(os.path.join(out, "sweep", "sweep.jsonl"))]
assert rows and all(r["status"] == "ok" for r in rows), [r.get("error") for r in rows]
for r in rows:
    g = json.load(open(os.path.join(out, "sweep", r["out"], "summary.json")))["gpu_executor"]["impls"]
    for kind in ("stale_host", "padding_residue", "bug"):
        want = sum(g[i]["steps_with"][kind] for i in r["check_impls"].split(";"))
        assert r[kind] == want, f"{r['point_id']}: {kind} {r[kind]} != steps_with {want}"
print(f"results check: {len(rows)} sweep rows agree with their summaries (steps with a difference)")
PY
exit $rc
