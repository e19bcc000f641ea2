#!/usr/bin/env python3
"""The seed's metadata table with vLLM beside us: for each of the eight seed cases, our states'
GPU µs and launches from `dspark-sim bench` and the released vLLM's own suite, timed and
profiled by the oracle (scripts/oracle/vllm_oracle.py) on the same cases.

    python3 scripts/oracle/seed_table.py --bench results/bench/bench.json \
        --oracle oracle-0.31.0.json --oracle oracle-0.34.0.json --out seed-table.md

Both sides must come from the same cases: `bench --batch 16 --seed 4` and the oracle's
`dspark-sim step --case C --batch 16 --seed 4` reports (scripts/gpu-oracle.sh runs both). The
two sides are timed differently, and the table says so in its header: ours is the state's
suite replayed from a CUDA graph (or eager where the state cannot be captured), GPU time from
CUDA events with a cold L2; the release's is its Python builders run eagerly, as vLLM runs them
(host time inside the interval), with a cold L2. The launch columns must agree exactly where
the release and our state are the same code; the table marks each pair.

The implementations come from bench.json's meta.impls (the registry), by role: the seed's
Before and After and the project's own. Nothing here names an implementation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

# `dspark-sim step --case` names -> `bench` case names
CASES = {
    "prefill": "prefill", "chunked_prefill": "chunked_prefill", "mixed": "mixed", "decode": "decode",
    "verify": "dspark_verify", "adaptive_verify": "dspark_adaptive_verify",
    "draft": "dspark_draft", "adaptive_draft": "dspark_adaptive_draft",
}


def load(path: str, what: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"seed_table: {path}: cannot read the {what}: {e}")


def release_rows(report: dict, path: str) -> dict:
    """case -> {"us", "floor_us", "launches"} from an oracle report's step reports."""
    out = {}
    for row in report.get("per_step", []):
        name = row.get("step", "")
        if not name.endswith(".json") or name[:-5] not in CASES:
            continue
        t = row.get("release_time", {})
        lc = row.get("release_launches", {})
        out[name[:-5]] = {"us": t.get("median_us"), "floor_us": t.get("floor_us"),
                          "launches": lc.get("total"), "timing_error": t.get("error")}
    if not out:
        raise SystemExit(f"seed_table: {path}: no seed-case step reports with timings (run the oracle "
                         "on a GPU with --steps CASE.json and without --no-timing)")
    return out


def fmt(v, nd=1):
    return "n/a" if v is None else (f"{v:.{nd}f}" if isinstance(v, float) else str(v))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", required=True, help="bench.json of `dspark-sim bench --batch 16 --seed 4`")
    ap.add_argument("--oracle", action="append", default=[], required=True,
                    help="an oracle report (vllm_oracle.py --out) with the seed cases; repeat per release")
    ap.add_argument("--before", action="append", default=[],
                    help="oracle reports that check the seed's Before builder by builder (vllm_oracle.py "
                    "--builders, one release each, e.g. 0.29.0's token map and indexers and 0.30.0's SWA, "
                    "MLA and ring): their launches are summed per case beside the Before's")
    ap.add_argument("--out", default=None, help="also write the table (markdown) and a .json beside it")
    args = ap.parse_args(argv)

    bench = load(args.bench, "bench results")
    impls = bench.get("meta", {}).get("impls")
    if not isinstance(impls, list):
        raise SystemExit(f"seed_table: {args.bench}: meta.impls is missing (a bench.json from this version "
                         "of dspark-sim carries the registry)")
    by_role = {}
    for i in sorted(impls, key=lambda i: i.get("order", 0)):
        by_role.setdefault(i.get("role"), i["name"])
    ours = [(r, by_role[r]) for r in ("seed-before", "seed-after", "own") if r in by_role]
    rows = {(r["case"], r["impl"]): r for r in bench.get("metadata", [])}
    meta = bench["meta"]
    if (meta.get("batch"), meta.get("seed")) != (16, 4):
        print(f"seed_table: note: bench ran batch {meta.get('batch')} seed {meta.get('seed')}; the oracle's "
              "seed cases are batch 16 seed 4 (scripts/gpu-oracle.sh): the two sides are different batches",
              file=sys.stderr)
    canonical = {n: i["name"] for i in impls for n in [i["name"], *i.get("aliases", [])]}
    releases = []
    for path in args.oracle:
        rep = load(path, "oracle report")
        impl = canonical.get(rep["meta"]["impl"], rep["meta"]["impl"])
        releases.append((rep["meta"]["release"], impl, release_rows(rep, path)))

    before = []
    for path in args.before:
        rep = load(path, "oracle report")
        before.append((rep["meta"]["release"], "+".join(rep.get("builders", [])), release_rows(rep, path)))
    before_impl = by_role.get("seed-before")

    head = ["case"]
    for role, name in ours:
        head += [f"{name} µs", f"{name} launches"]
    if len(ours) >= 2:
        head.append(f"{ours[0][1]} → {ours[1][1]}")
    for ver, impl, _ in releases:
        head += [f"vLLM {ver} µs (eager)", f"vLLM {ver} launches", f"= {impl}?"]
    if before:
        head += [" + ".join(f"{ver} ({b})" for ver, b, _ in before) + " launches", f"= {before_impl}?"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    table = []
    for case, bcase in CASES.items():
        cells = [case]
        rec = {"case": case}
        us = []
        for role, name in ours:
            r = rows.get((bcase, name), {})
            us.append(r.get("gpu_us_median"))
            cells += [fmt(r.get("gpu_us_median")), fmt(r.get("launches"))]
            rec[name] = {"us": r.get("gpu_us_median"), "launches": r.get("launches"), "method": r.get("method"),
                         "floor_us": r.get("floor_us")}
        if len(ours) >= 2:
            ratio = us[0] / us[1] if us[0] and us[1] else None
            cells.append("n/a" if ratio is None else f"{ratio:.2f}x")
            rec["before_over_after"] = ratio
        for ver, impl, rel in releases:
            r = rel.get(case, {})
            mine = rows.get((bcase, impl), {}).get("launches")
            eq = None if r.get("launches") is None or mine is None else r["launches"] == mine
            cells += [fmt(r.get("us")), fmt(r.get("launches")), {None: "n/a", True: "equal",
                                                                  False: f"ours {mine}"}[eq]]
            rec[f"vllm-{ver}"] = {**r, "ours_launches": mine, "launches_equal": eq}
        if before:
            parts = [rel.get(case, {}).get("launches") for _, _, rel in before]
            total = None if any(p is None for p in parts) else sum(parts)
            mine = rows.get((bcase, before_impl), {}).get("launches")
            diff = None if total is None or mine is None else mine - total
            cells += [fmt(total), "n/a" if diff is None else ("equal" if diff == 0 else f"ours {diff:+d}")]
            rec["before_by_builder"] = {"releases": [f"{v}:{b}" for v, b, _ in before], "parts": parts,
                                        "release_launches": total, "ours_launches": mine, "ours_minus_release": diff}
        lines.append("| " + " | ".join(cells) + " |")
        table.append(rec)
    gpu = meta.get("gpu", "?")
    note = (f"GPU: {gpu}. Ours: `dspark-sim bench` (batch {meta.get('batch')}, seed {meta.get('seed')}), GPU time "
            "per suite from CUDA events, cold L2, graph replay where the state can be captured. vLLM: its "
            "own builders run eagerly by the oracle as vLLM runs them (Python host time inside), cold L2, "
            "median of 20. The states are SM100 code paths measured on this GPU.")
    text = "\n".join([note, "", *lines]) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
            json.dump({"note": note, "bench": args.bench, "oracle": args.oracle, "before": args.before,
                       "rows": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
