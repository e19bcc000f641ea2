#!/usr/bin/env python3
"""CTest `vllm_sweep_plot`: a sweep folder read the way vLLM 0.33.0's sweep plotter reads one
(vllm/benchmarks/sweep/plot.py, from the vLLM cache that scripts/fetch-vllm.sh fills,
$DSPARK_VLLM_CACHE, default <repo>/.vllm-cache).

    test_vllm_sweep_plot.py PATH/TO/dspark-sim

plot.py's plot() loads `run_data for path in output_dir.rglob("**/summary.json") for run_data in
_json_load_bytes(path)`: every summary.json is a JSON list of runs. The test runs a small sweep,
then takes plot.py's own loading functions (_json_load_bytes, _convert_inf_nan_strings,
_get_metric, _get_group: pure Python over json and pathlib, found with Python's ast and run
here; nothing of vLLM is imported) and the loading line above, pointed at OUT/vllm, and checks
that every ok point is one run with the default --var-x/--var-y metrics and the keys a user
groups by. Exits 77 (CTest: skipped) with a message when the cache has no 0.33.0.
"""
import ast
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile

VERSION = "0.33.0"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77
LOADERS = ("_json_load_bytes", "_convert_inf_nan_strings", "_get_metric", "_get_group")


def plot_py():
    cache = os.environ.get("DSPARK_VLLM_CACHE") or os.path.join(ROOT, ".vllm-cache")
    return os.path.join(cache, VERSION, "vllm", "benchmarks", "sweep", "plot.py")


def vllm_loaders(path):
    """plot.py's loading functions, compiled from its own source."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in LOADERS]
    assert {n.name for n in found} == set(LOADERS), f"plot.py lacks one of {LOADERS}"
    module = ast.Module(body=found, type_ignores=[])
    scope = {"json": json, "Path": pathlib.Path}
    exec(compile(module, path, "exec"), scope)  # noqa: S102 - vLLM's own functions, for the test only
    return scope


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    sim = sys.argv[1]
    source = plot_py()
    if not os.path.isfile(source):
        print(f"vllm_sweep_plot: skipped: no vLLM {VERSION} plot.py at {source} (scripts/fetch-vllm.sh)")
        return SKIP
    v = vllm_loaders(source)
    with tempfile.TemporaryDirectory(prefix="dspark_vllm_sweep_") as tmp:
        out = os.path.join(tmp, "sweep")
        subprocess.run([sim, "sweep", "--workload", "chat", "--concurrency", "1,2", "--num-requests", "4",
                        "--mode", "none,dspark", "--time-impl", "fused", "--no-check", "--progress", "none",
                        "--out", out], check=True, capture_output=True)
        with open(os.path.join(out, "sweep.jsonl"), encoding="utf-8") as f:
            ok = [json.loads(line) for line in f if line.strip() and json.loads(line)["status"] == "ok"]
        assert len(ok) == 4, ok
        # plot(): all_data = [run_data for path in output_dir.rglob("**/summary.json")
        #                     for run_data in _json_load_bytes(path)]
        output_dir = pathlib.Path(out, "vllm")
        all_data = [run_data for path in output_dir.rglob("**/summary.json") for run_data in v["_json_load_bytes"](path)]
        all_data = v["_convert_inf_nan_strings"](all_data)
        assert len(all_data) == len(ok), (len(all_data), len(ok))
        for run in all_data:
            assert isinstance(run, dict), run
            for metric in ("total_token_throughput", "median_ttft_ms"):  # --var-x, --var-y defaults
                value = v["_get_metric"](run, metric)
                assert isinstance(value, (int, float)) and math.isfinite(value), (metric, value)
            assert math.isinf(v["_get_metric"](run, "request_rate")), run["request_rate"]
        groups = {v["_get_group"](run, ["max_concurrency", "mode"]) for run in all_data}
        assert groups == {(("max_concurrency", str(c)), ("mode", m)) for c in (1, 2) for m in ("none", "dspark")}, groups
        # The sweep folder itself also holds each point's summary.json (one object, our schema):
        # vLLM's plotter is given OUT/vllm, as docs/commands.md says.
        assert any(not isinstance(json.load(open(p, "rb")), list) for p in pathlib.Path(out, "points").rglob("summary.json"))
    print(f"vllm_sweep_plot: {len(all_data)} runs read by vLLM {VERSION}'s plot.py loaders from OUT/vllm")
    return 0


if __name__ == "__main__":
    sys.exit(main())
