#!/usr/bin/env python3
"""CTest `vllm_oracle_v4_cpu`: the vLLM oracle on DeepSeek-V4's states (a) and (b) as released, on
the CPU through Triton's interpreter: vllm-0.24 against vLLM 0.24.0 and vllm-0.27 against 0.27.1
on two seed cases (decode, verify; batch 4):
  - no bug, and the native indexer path's fields (per-request decode_lens, [nd, L] seq_out) are
    compared;
  - one cell of our indexer_c4.seq_out changed is reported as one bug, with exit status 1.
A release whose tree is not in $DSPARK_VLLM_CACHE (or <repo>/.vllm-cache) is skipped; with neither
fetched, or without torch and triton, the test is skipped (exit 77).
Usage: test_vllm_oracle_v4.py PATH/TO/dspark-sim
"""
import json
import os
import subprocess
import sys
import tempfile

from oracle_test_util import ORACLE, SKIP, Checks, has_release, release_cache, torch_missing

PAIRS = (("0.24.0", "vllm-0.24"), ("0.27.1", "vllm-0.27"))


def main():
    sim = sys.argv[1]
    missing = torch_missing()
    if missing:
        print(missing)
        return SKIP
    cache = release_cache()
    pairs = [(v, i) for v, i in PAIRS if has_release(cache, v)]
    if not pairs:
        print(f"skipped: no vLLM 0.24.0 or 0.27.1 tree in {cache} (scripts/fetch-vllm.sh 0.24.0 0.27.1)")
        return SKIP
    env = dict(os.environ, TRITON_INTERPRET="1", DSPARK_VLLM_CACHE=cache)
    checks = Checks()
    check = checks.check

    for version, impl in pairs:
        with tempfile.TemporaryDirectory(prefix="dspark-oracle-v4-test-") as tmp:
            reports = []
            for case in ("decode", "verify"):
                path = os.path.join(tmp, case + ".json")
                p = subprocess.run([sim, "step", "--model", "v4", "--case", case, "--batch", "4", "--seed", "4",
                                    "--impl", impl, "--out", path], capture_output=True, text=True)
                check(p.returncode == 0, f"{impl}: dspark-sim step --case {case}: exit {p.returncode} {p.stderr[-300:]}")
                reports.append(path)
            out = os.path.join(tmp, "report.json")
            p = subprocess.run([sys.executable, ORACLE, "--release", version, "--model", "v4", "--impl", impl,
                                "--steps", *reports, "--device", "cpu", "--out", out],
                               capture_output=True, text=True, env=env)
            check(p.returncode == 0, f"{version}: oracle exit {p.returncode} {p.stdout[-300:]} {p.stderr[-600:]}")
            if os.path.exists(out):
                with open(out) as f:
                    r = json.load(f)
                check(r["steps_run"] == 2 and not r["errors"], f"{version}: both steps ran: {r['errors']}")
                check(r["differences_by_kind"].get("bug", 0) == 0, f"{version}: no bug: {r['differences_by_kind']}")
                compared = set(r["per_step"][0]["compared"])
                want = {"token_map.token_to_req", "swa.swa_indices", "mla_c4.compressed_slots",
                        "mla_c128.c128a_decode_indices", "indexer_c4.seq_out", "indexer_c4.decode_lens",
                        "indexer_c4.compressed_slots"}
                check(want <= compared, f"{version}: fields compared: missing {sorted(want - compared)}")
                check("indexer_c4.bt_out" not in compared, f"{version}: the native path hands out no bt_out")
            with open(reports[1]) as f:
                rep = json.load(f)
            rep["impls"][impl]["outputs"]["indexer_c4.seq_out"]["values"][2] += 1
            bad = os.path.join(tmp, "planted.json")
            with open(bad, "w") as f:
                json.dump(rep, f)
            out2 = os.path.join(tmp, "planted_report.json")
            p = subprocess.run([sys.executable, ORACLE, "--release", version, "--model", "v4", "--impl", impl,
                                "--steps", bad, "--device", "cpu", "--out", out2],
                               capture_output=True, text=True, env=env)
            check(p.returncode == 1, f"{version}: a planted difference exits 1 (got {p.returncode})")
            if os.path.exists(out2):
                with open(out2) as f:
                    r = json.load(f)
                d = [x for x in r["differences"] if x["field"] == "indexer_c4.seq_out"]
                check(len(d) == 1 and d[0]["kind"] == "bug" and d[0]["cells"] == 1 and d[0]["first_index"] == 2,
                      f"{version}: the planted cell is one bug at index 2: {d}")
    return checks.exit_status()


if __name__ == "__main__":
    sys.exit(main())
