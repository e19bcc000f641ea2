#!/usr/bin/env python3
"""Makes every plot (PNG and SVG) and table (Markdown) a results folder has the inputs for.

    python3 plots/plot_all.py RESULTS_DIR [--out DIR] [--sweep DIR] [--run DIR] [--bench DIR]

RESULTS_DIR may be a sweep folder (sweep.jsonl), a run folder (summary.json, steps.csv,
requests.csv), a bench folder (bench.json), or any folder above them; the first folder of each
kind found (shallowest, then by name) is used unless --sweep/--run/--bench names one. A plot
whose inputs are absent is skipped with the reason printed. The scripts only read result files.
See plots/README.md for the inputs and the plots.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_io as rio  # noqa: E402
from plot_bench import plot_bench_mismatches, plot_bench_tpot, plot_launches, plot_metadata_gpu_us  # noqa: E402
from plot_common import Output  # noqa: E402
from plot_run import plot_acceptance, plot_run_mismatches, plot_steps_over_time  # noqa: E402
from plot_serving import plot_serving, plot_serving_vs_baseline, serving_tables  # noqa: E402


def pick(kind, explicit, found, out):
    if explicit:
        return explicit
    if not found[kind]:
        return None
    if len(found[kind]) > 1:
        print(f"plot_all: {kind}: using {found[kind][0]}; also found {', '.join(found[kind][1:])} "
              f"(pass --{kind} DIR to choose)")
    return found[kind][0]


def make_all(results_dir, out_dir, sweep_dir=None, run_dir=None, bench_dir=None):
    found = rio.find_results(results_dir)
    out = Output(out_dir)
    sweep_dir = pick("sweep", sweep_dir, found, out)
    run_dir = pick("run", run_dir, found, out)
    bench_dir = pick("bench", bench_dir, found, out)
    mismatch_dir, why = run_dir, None  # the stale-host plot's run, when not a sweep point
    # Every implementation's order, role, colour, hatch and marker: the files' meta.impls.
    try:
        reg = rio.registry_of(bench_dir and os.path.join(bench_dir, "bench.json"),
                              sweep_dir and os.path.join(sweep_dir, "sweep_meta.json"),
                              run_dir and os.path.join(run_dir, "summary.json"))
    except rio.InputError as e:
        print(f"plot_all: {e}; implementations drawn without their registry", file=sys.stderr)
        reg = rio.ImplRegistry()

    bench_plots = ["metadata_gpu_us", "launches_per_suite", "stale_host_divergence_bench", "tpot_by_mode", "bench.md"]
    if bench_dir is None:
        for p in bench_plots:
            out.skip(p, f"no bench.json under {results_dir}")
    else:
        try:
            bench = rio.read_bench(bench_dir)
        except rio.InputError as e:
            for p in bench_plots:
                out.skip(p, str(e))
        else:
            for entry in bench.get("metadata", []) + bench.get("tpot", []):
                entry["impl"] = reg.canonical(entry["impl"])
            plot_metadata_gpu_us(bench, reg, out)
            plot_launches(bench, reg, out)
            plot_bench_mismatches(bench, reg, out)
            plot_bench_tpot(bench, reg, out)
            # bench's own tables (bench.md, as bench printed them): copied, never rendered again here
            try:
                out.text("bench.md", rio.read_bench_tables(bench_dir))
            except rio.InputError as e:
                out.skip("bench.md", str(e))

    if sweep_dir is None:
        out.skip("serving_vs_concurrency", f"no sweep.jsonl under {results_dir}")
    else:
        try:
            rows = rio.read_sweep(sweep_dir)
        except rio.InputError as e:
            out.skip("serving_vs_concurrency", str(e))
        else:
            for r in rows:
                if "impl" in r:
                    r["impl"] = reg.canonical(r["impl"])
            plot_serving(rows, reg, out, sweep_dir)
            plot_serving_vs_baseline(rows, reg, out)
            out.text("serving_tables.md", serving_tables(rows, reg))
            if run_dir is None:
                run_dir = _sweep_point_for_run_plots(sweep_dir, rows, reg)
                mismatch_dir, why = _sweep_point_that_checked_every_impl(sweep_dir, rows, reg)

    no_run = f"no run folder (summary.json, steps.csv, requests.csv) under {results_dir}"
    if run_dir is None:
        for p in ["steps_over_time", "acceptance_length"]:
            out.skip(p, no_run)
    else:
        print(f"plot_all: run plots from {run_dir}")
        plot_steps_over_time(run_dir, out)
        plot_acceptance(run_dir, out)
    if mismatch_dir is not None:
        if not reg:
            reg.add_meta(rio.read_meta(os.path.join(mismatch_dir, "summary.json")), mismatch_dir)
        plot_run_mismatches(mismatch_dir, reg, out)
    else:
        out.skip("stale_host_divergence_run", why or no_run)
    return out, found


def _sweep_point_that_checked_every_impl(sweep_dir, rows, reg):
    """(folder, None) of an ok point whose metadata check ran every implementation of the
    sweep (adaptive mode and the highest concurrency first), or (None, why) when none did: a point checks only its own implementation unless the
    sweep ran with --impl all, and its panels would be zero for every other one."""
    impls = {r.get("impl") for r in rio.ok_rows(rows)}
    # Adaptive points first: stale host state shows under adaptive verification only.
    modes = {"adaptive": 2, "dspark": 1}
    for r in sorted(rio.ok_rows(rows), key=lambda r: (-modes.get(r.get("mode"), 0), -_concurrency_rank(r),
                                                      r["point_id"])):
        checked = {reg.canonical(i) for i in str(r.get("check_impls") or "").split(";")}
        folder = os.path.join(sweep_dir, r.get("out", ""))
        if r.get("check") and impls <= checked and os.path.isfile(os.path.join(folder, "summary.json")):
            print(f"plot_all: stale-host plot from sweep point {r['point_id']} (checked {', '.join(reg.ordered(checked))})")
            return folder, None
    return None, (f"no point of {sweep_dir} checked every implementation ({', '.join(sorted(map(str, impls)))}); "
                  "rerun the sweep with --impl all, or pass --run DIR of a run with --impl all")


def _concurrency_rank(r):
    """Concurrency as a load: 0 (no limit) is the highest."""
    c = r.get("concurrency") or 0
    return float("inf") if c <= 0 else c


def _sweep_point_for_run_plots(sweep_dir, rows, reg):
    """A sweep's point folder for the one-run plots: adaptive mode first, then the seed's After
    (the newest vLLM state, by its role in the registry), then the highest concurrency; ties
    by point id, so the choice does not depend on the rows' order."""
    after = reg.with_role("seed-after")
    modes = {"adaptive": 2, "dspark": 1}

    def score(r):
        return (modes.get(r.get("mode"), 0), after is not None and r.get("impl") == after, _concurrency_rank(r))
    for r in sorted(rio.ok_rows(rows), key=lambda r: (tuple(-float(x) for x in score(r)), r["point_id"])):
        folder = os.path.join(sweep_dir, r.get("out", ""))
        if os.path.isfile(os.path.join(folder, "steps.csv")):
            print(f"plot_all: no standalone run folder; one-run plots from sweep point {r['point_id']} "
                  f"(mode {r.get('mode')}, {r.get('impl')}, concurrency {r.get('concurrency') or 'none'})")
            return folder
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", help="a results folder (sweep, run, bench, or a folder above them)")
    ap.add_argument("--out", help="where to write the plots (default RESULTS_DIR/plots)")
    ap.add_argument("--sweep", help="use this sweep folder")
    ap.add_argument("--run", help="use this run folder for the one-run plots")
    ap.add_argument("--bench", help="use this bench folder")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.results_dir):
        print(f"plot_all: '{args.results_dir}' is not a folder", file=sys.stderr)
        return 2
    out_dir = args.out or os.path.join(args.results_dir, "plots")
    try:
        out, found = make_all(args.results_dir, out_dir, args.sweep, args.run, args.bench)
    except rio.InputError as e:
        print(f"plot_all: {e}", file=sys.stderr)
        return 1
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        # A result file of an unexpected shape that no reader's check named: one line, no traceback.
        print(f"plot_all: a result file under {args.results_dir} does not hold what the plots need "
              f"({type(e).__name__}: {e}); check it against docs/commands.md's result schemas", file=sys.stderr)
        return 1
    for what, why in out.skipped:
        print(f"plot_all: skipped {what}: {why}")
    for path in out.written:
        print(f"plot_all: wrote {path}")
    if not out.written:
        print(f"plot_all: nothing to plot: no sweep.jsonl, summary.json or bench.json under {args.results_dir}",
              file=sys.stderr)
        return 1
    print(f"plot_all: {len(out.written)} files in {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
