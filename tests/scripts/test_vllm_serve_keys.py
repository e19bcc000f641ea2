#!/usr/bin/env python3
"""CTest `vllm_serve_keys`: the keys of `dspark-sim run --save-result` against vLLM 0.33.0's own
`vllm bench serve` (vllm/benchmarks/serve.py), read from the vLLM cache that
scripts/fetch-vllm.sh fills ($DSPARK_VLLM_CACHE, default <repo>/.vllm-cache).

    test_vllm_serve_keys.py PATH/TO/dspark-sim

serve.py is parsed (Python's ast; nothing of vLLM is imported or run) for the keys its
--save-result file has without --save-detailed, in their order:
  - main_async(): the setup keys `result_json["k"] = ...` at the function's top level;
  - benchmark(): the `result = {...}` literal of generation metrics, less the detailed keys that
    main_async() deletes, then the `result["spec_decode_*"] = ...` keys;
  - process_one_metric(): mean_/median_/std_/p{P}_ of each latency metric (the run's percentiles).
The test runs a small adaptive run with --save-result and checks that the vLLM keys our file
has are in vLLM's order, that every vLLM key is there, and that the spec-decode acceptance rate
is in percent. Exits 77 (CTest: skipped) with a message when the cache has no 0.33.0.
"""
import ast
import json
import os
import subprocess
import sys
import tempfile

VERSION = "0.33.0"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77


def serve_py():
    cache = os.environ.get("DSPARK_VLLM_CACHE") or os.path.join(ROOT, ".vllm-cache")
    return os.path.join(cache, VERSION, "vllm", "benchmarks", "serve.py")


def _function(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    raise AssertionError(f"serve.py has no function {name}()")


def _subscript_key(target, name):
    """'k' of `name["k"] = ...`, else None."""
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name:
        key = target.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    return None


def vllm_keys(path, percentiles, metrics):
    tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
    main = _function(tree, "main_async")
    setup = []
    for stmt in main.body:  # top level only: keys written on every run
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                key = _subscript_key(t, "result_json")
                if key:
                    setup.append(key)
    detailed = []
    for node in ast.walk(main):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.List):
            names = [e.value for e in node.iter.elts if isinstance(e, ast.Constant)]
            if "input_lens" in names:
                detailed = names
    if not detailed:
        raise AssertionError("serve.py main_async(): no list of the detailed keys it deletes")
    bench = _function(tree, "benchmark")
    result = None
    for node in ast.walk(bench):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and \
                any(_is_name(t, "result") for t in node.targets):
            keys = [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
            if "failed" in keys:  # the generation metrics (the other literal is ASR's)
                result = [k for k in keys if k not in detailed]
    if result is None:
        raise AssertionError("serve.py benchmark(): no `result = {...}` with 'failed'")
    spec = []
    for node in ast.walk(bench):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                key = _subscript_key(t, "result")
                if key and key.startswith("spec_decode_"):
                    spec.append(key)
    if not spec:
        raise AssertionError("serve.py benchmark(): no result['spec_decode_*'] keys")
    latency = []
    for m in metrics:
        latency += [f"mean_{m}_ms", f"median_{m}_ms", f"std_{m}_ms"]
        latency += [f"p{int(p) if int(p) == p else p}_{m}_ms" for p in percentiles]
    return setup + result + spec + latency


def _is_name(node, name):
    return isinstance(node, ast.Name) and node.id == name


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    path = serve_py()
    if not os.path.isfile(path):
        print(f"test_vllm_serve_keys: SKIPPED: no vLLM {VERSION} at {path}; fill the cache with "
              f"scripts/fetch-vllm.sh {VERSION} (or set DSPARK_VLLM_CACHE)")
        return SKIP
    percentiles, metrics = [50, 90, 99], ["ttft", "tpot", "itl", "e2el"]
    expected = vllm_keys(path, percentiles, metrics)
    with tempfile.TemporaryDirectory(prefix="dspark_vllm_keys_") as tmp:
        p = subprocess.run([argv[1], "run", "--workload", "chat", "--num-prompts", "6", "--max-concurrency", "3",
                            "--mode", "adaptive", "--no-check", "--progress", "none", "--save-result",
                            "--result-filename", "result.json", "--out", tmp], capture_output=True, text=True)
        if p.returncode != 0:
            print(p.stdout + p.stderr)
            return 1
        with open(os.path.join(tmp, "result.json"), encoding="utf-8") as f:
            ours = list(json.load(f, object_pairs_hook=lambda pairs: pairs))
        keys = [k for k, _ in ours]
        doc = dict(ours)
    failures = []
    missing = [k for k in expected if k not in keys]
    if missing:
        failures.append(f"keys of vLLM {VERSION} missing from our file: {missing}")
    in_ours = [k for k in keys if k in expected]
    if in_ours != [k for k in expected if k in keys]:
        failures.append(f"vLLM's keys in another order:\n  ours:  {in_ours}\n  vLLM's: {expected}")
    first = [k for k in keys[:len(expected)]]
    if first != expected:
        failures.append(f"the file does not open with vLLM's keys:\n  ours:  {first}\n  vLLM's: {expected}")
    rate = doc.get("spec_decode_acceptance_rate")
    length = doc.get("spec_decode_acceptance_length")
    if not isinstance(rate, (int, float)) or not 1.0 < rate <= 100.0:
        failures.append(f"spec_decode_acceptance_rate should be a percentage, got {rate!r}")
    if not isinstance(length, (int, float)) or length < 1.0:
        failures.append(f"spec_decode_acceptance_length should be >= 1, got {length!r}")
    if doc.get("request_rate") != "inf":
        failures.append(f"request_rate of an infinite rate should be 'inf', got {doc.get('request_rate')!r}")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"test_vllm_serve_keys: {len(expected)} keys of vLLM {VERSION}'s --save-result file, in its order")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
