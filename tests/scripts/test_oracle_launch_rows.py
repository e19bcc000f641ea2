#!/usr/bin/env python3
"""CTest `vllm_oracle_launch_rows`: the oracle's launch comparison (scripts/oracle/vllm_oracle.py,
compare_launches) without torch or a release: seed cases against `verify --json`'s counts, and
dumped steps against the launches their own `dspark-sim step` report gave; a recorded graph's
build counts one launch more (the second branch's token map); an unequal dumped step is listed."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "oracle"))
import vllm_oracle  # noqa: E402


def main():
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    release = lambda n: {"swa": n - 2, "deepgemm": 2, "total": n}
    per_step = [
        {"step": "decode.json", "release_launches": release(37)},
        {"step": "mixed.json", "release_launches": release(44)},
        {"step": "azure/0", "release_launches": release(37), "ours_launches": 37},
        {"step": "azure/25", "release_launches": release(31), "ours_launches": 37},
        {"step": "azure/50", "release_launches": release(17), "ours_launches": 18, "ours_graph_launches": 1},
        {"step": "azure/75"},  # not profiled
    ]
    ours = {"seed_cases": {"vllm-0.24": {"decode": {"launches": 37}, "mixed": {"launches": 43}}}}
    rows = vllm_oracle.compare_launches(ours, per_step)
    check(rows["decode"]["equal"] is True, f"decode: {rows['decode']}")
    check(rows["mixed"]["equal"] is False and rows["mixed"]["ours"] == 43, f"mixed: {rows['mixed']}")
    d = rows.get("dumped_steps", {})
    check(d.get("profiled") == 3 and d.get("equal") == 2, f"dumped steps: {d}")
    check([u["step"] for u in d.get("unequal", [])] == ["azure/25"], f"unequal: {d.get('unequal')}")
    check("dumped_steps" not in vllm_oracle.compare_launches(ours, per_step[:2]), "no dumped rows without dumped steps")
    for f in failures:
        print("FAIL:", f)
    print("vllm_oracle_launch_rows:", "ok" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
