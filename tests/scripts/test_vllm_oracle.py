#!/usr/bin/env python3
"""CTest `vllm_oracle_cpu`: the vLLM oracle (scripts/oracle/) on two seed cases, on the CPU through
Triton's interpreter, against the release tree in $DSPARK_VLLM_CACHE (or <repo>/.vllm-cache):
  - vLLM's own builders agree with the release's own state (vllm-0.31 / vllm-0.34) on every compared field (no bug);
  - one cell of our output changed is reported as a bug, with exit status 1;
  - the loader refuses a second release in one process and never hands out a stubbed module.
Skipped (exit 77) when torch or triton is not importable, or no release tree has been fetched
(scripts/fetch-vllm.sh 0.34.0).
Usage: test_vllm_oracle.py PATH/TO/dspark-sim [VERSION]
"""
import json
import os
import subprocess
import sys
import tempfile

from oracle_test_util import ORACLE, ROOT, SKIP, Checks, has_release, release_cache, torch_missing


def main():
    sim = sys.argv[1]
    version = sys.argv[2] if len(sys.argv) > 2 else "0.34.0"
    missing = torch_missing()
    if missing:
        print(missing)
        return SKIP
    cache = release_cache()
    if not has_release(cache, version):
        print(f"skipped: no vLLM {version} tree in {cache} (scripts/fetch-vllm.sh {version})")
        return SKIP
    env = dict(os.environ, TRITON_INTERPRET="1", DSPARK_VLLM_CACHE=cache)
    checks = Checks()
    check = checks.check

    impl = "vllm-0.34" if version == "0.34.0" else "vllm-0.31"  # the release's own state
    with tempfile.TemporaryDirectory(prefix="dspark-oracle-test-") as tmp:
        reports = []
        for case in ("decode", "adaptive_verify"):
            path = os.path.join(tmp, case + ".json")
            p = subprocess.run([sim, "step", "--case", case, "--batch", "4", "--seed", "4", "--impl", impl,
                                "--out", path], capture_output=True, text=True)
            check(p.returncode == 0, f"dspark-sim step --case {case}: exit {p.returncode} {p.stderr[-300:]}")
            reports.append(path)
        out = os.path.join(tmp, "report.json")
        p = subprocess.run([sys.executable, ORACLE, "--release", version, "--steps", *reports, "--device", "cpu",
                            "--out", out], capture_output=True, text=True, env=env)
        check(p.returncode == 0, f"oracle on the seed cases: exit {p.returncode} {p.stdout[-300:]} {p.stderr[-600:]}")
        if os.path.exists(out):
            with open(out) as f:
                r = json.load(f)
            check(r["meta"]["release"] == version and r["meta"]["schema"] == "dspark-vllm-oracle", "report meta")
            check(r["steps_run"] == 2 and not r["errors"], f"both steps ran: {r['errors']}")
            check(r["differences_by_kind"].get("bug", 0) == 0, f"no bug: {r['differences_by_kind']}")
            compared = set(r["per_step"][0]["compared"])
            want = {"token_map.token_to_req", "swa.swa_lens", "swa.swa_indices", "mla_r2.compressed_slots",
                    "mla_r2.ring_slots", "indexer_r1.seq_out", "indexer_r1.bt_out", "indexer_r2.seq_out",
                    "indexer_r2.compressed_slots"}
            check(want <= compared, f"fields compared: missing {sorted(want - compared)}")
            check(r["launches"].startswith("n/a"), "launch counts are n/a on the CPU")

        # A planted bug: one cell of our indexer output changed.
        with open(reports[1]) as f:
            rep = json.load(f)
        rep["impls"][impl]["outputs"]["indexer_r1.indices"]["values"][1] += 1
        bad = os.path.join(tmp, "planted.json")
        with open(bad, "w") as f:
            json.dump(rep, f)
        out2 = os.path.join(tmp, "planted_report.json")
        p = subprocess.run([sys.executable, ORACLE, "--release", version, "--steps", bad, "--device", "cpu",
                            "--out", out2], capture_output=True, text=True, env=env)
        check(p.returncode == 1, f"a planted difference exits 1 (got {p.returncode})")
        if os.path.exists(out2):
            with open(out2) as f:
                r = json.load(f)
            d = [x for x in r["differences"] if x["field"] == "indexer_r1.indices"]
            check(len(d) == 1 and d[0]["kind"] == "bug" and d[0]["cells"] == 1 and d[0]["first_index"] == 1,
                  f"the planted cell is one bug at index 1: {d}")

        # The seed's Before, builder by builder: its token map and indexer chains against 0.29.0's
        # own (a release without DeepSeek-V4.1, so only those builders run), and a refusal when a
        # V4.1 builder is asked of it.
        old = "0.29.0"
        if os.path.isfile(os.path.join(cache, old, "vllm", "__init__.py")):
            path = os.path.join(tmp, "before_adaptive_verify.json")
            p = subprocess.run([sim, "step", "--case", "adaptive_verify", "--batch", "4", "--seed", "4", "--impl",
                                "vllm-pre56562", "--out", path], capture_output=True, text=True)
            check(p.returncode == 0, f"dspark-sim step --impl vllm-pre56562: exit {p.returncode} {p.stderr[-300:]}")
            out3 = os.path.join(tmp, "before_report.json")
            p = subprocess.run([sys.executable, ORACLE, "--release", old, "--steps", path, "--device", "cpu",
                                "--impl", "vllm-pre56562", "--builders", "token_map,indexer_r1,indexer_r2",
                                "--out", out3], capture_output=True, text=True, env=env)
            check(p.returncode == 0, f"Before vs {old}'s chains: exit {p.returncode} {p.stderr[-600:]}")
            if os.path.exists(out3):
                with open(out3) as f:
                    r = json.load(f)
                compared = set(r["per_step"][0]["compared"]) if r["per_step"] else set()
                want = {"token_map.token_to_req", "indexer_r1.indices", "indexer_r1.seq_out", "indexer_r2.bt_out",
                        "indexer_r2.compressed_slots"}
                check(want <= compared and not any(k.startswith(("swa.", "mla_r2.")) for k in compared),
                      f"Before vs {old}: the chains' fields compared, no V4.1 builder's: {sorted(compared)}")
                check(r["differences_by_kind"].get("bug", 0) == 0 and r["builders"] == [
                    "token_map", "indexer_r1", "indexer_r2"], f"Before vs {old}: no bug {r['differences_by_kind']}")
            p = subprocess.run([sys.executable, ORACLE, "--release", old, "--steps", path, "--device", "cpu",
                                "--impl", "vllm-pre56562", "--builders", "swa", "--out", out3],
                               capture_output=True, text=True, env=env)
            check(p.returncode == 2 and "no DeepSeek-V4.1" in p.stderr,
                  f"a V4.1 builder of {old} is refused: exit {p.returncode} {p.stderr[-300:]}")
        else:
            print(f"skip the Before's builder-by-builder check: no vLLM {old} tree (scripts/fetch-vllm.sh {old})")

        probe = ("import sys; sys.path.insert(0, %r); import vllm_loader as L; r = L.load(%r)\n"
                 "try:\n    L.load('0.0.1'); print('second load allowed')\nexcept RuntimeError: print('refused')\n"
                 "try:\n    r.module('vllm.config'); print('stub handed out')\nexcept ImportError: print('stub refused')\n"
                 % (os.path.join(ROOT, "scripts", "oracle"), version))
        p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
        check("refused" in p.stdout and "stub refused" in p.stdout, f"loader guards: {p.stdout.strip()} {p.stderr[-300:]}")

    return checks.exit_status()


if __name__ == "__main__":
    sys.exit(main())
