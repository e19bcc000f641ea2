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
import contextlib
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_io as rio  # noqa: E402

# Fixed colours per implementation and line styles per mode, the same in every plot.
IMPL_COLORS = {
    "chain": "#c0392b",
    "cached": "#e67e22",
    "device-chain": "#8e44ad",
    "fused": "#2471a3",
    "fused-suite": "#229954",
}
MODE_STYLES = {"none": (":", "s"), "dspark": ("--", "o"), "adaptive": ("-", "^")}
CASE_COLORS = {
    "prefill": "#1f77b4",
    "chunked_prefill": "#17becf",
    "mixed": "#2ca02c",
    "decode": "#000000",
    "dspark_verify": "#d62728",
    "dspark_adaptive_verify": "#ff7f0e",
    "dspark_draft": "#9467bd",
    "dspark_adaptive_draft": "#e377c2",
}

# Byte-stable outputs: no dates in the files, a fixed SVG id salt.
plt.rcParams["svg.hashsalt"] = "dspark-sim"
plt.rcParams["figure.dpi"] = 100
plt.rcParams["figure.constrained_layout.use"] = True


def impl_color(impl):
    return IMPL_COLORS.get(impl, "#7f8c8d")


@contextlib.contextmanager
def replaced_whole(path):
    """Yields a temporary name beside `path` to write; on success it replaces `path` in one
    rename, so a reader (or a kill) never finds a half-written file under the final name."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        yield tmp
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


class Output:
    """Collects what was written and what was skipped, and why."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.written = []
        self.skipped = []
        os.makedirs(out_dir, exist_ok=True)

    def save(self, fig, stem):
        for ext in ("png", "svg"):
            path = os.path.join(self.out_dir, f"{stem}.{ext}")
            with replaced_whole(path) as tmp:
                fig.savefig(tmp, format=ext, metadata={"Date": None} if ext == "svg" else {"Software": None},
                            bbox_inches="tight")
            self.written.append(path)
        plt.close(fig)

    def text(self, name, content):
        path = os.path.join(self.out_dir, name)
        with replaced_whole(path) as tmp:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(content)
        self.written.append(path)

    def skip(self, what, why):
        self.skipped.append((what, why))


def grouped_bars(ax, table, impls, cases, label_fn=None, errors=None):
    """Bars of table[case][impl], grouped by case, one colour per implementation."""
    width = 0.8 / max(len(impls), 1)
    for j, impl in enumerate(impls):
        xs, heights, lo, hi = [], [], [], []
        for i, case in enumerate(cases):
            value = table.get(case, {}).get(impl)
            if value is None:
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            heights.append(float(value))
            if errors is not None:
                low, high = errors.get(case, {}).get(impl, (value, value))
                lo.append(max(float(value) - float(low), 0.0))
                hi.append(max(float(high) - float(value), 0.0))
        if not xs:
            continue
        bars = ax.bar(xs, heights, width * 0.92, color=impl_color(impl), label=impl,
                      yerr=[lo, hi] if errors is not None else None, capsize=2 if errors is not None else 0,
                      error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
        if label_fn is not None:
            present = [c for c in cases if table.get(c, {}).get(impl) is not None]
            for k, (bar, case) in enumerate(zip(bars, present)):
                text = label_fn(case, impl)
                if text:
                    top = bar.get_height() + (hi[k] if errors is not None else 0.0)
                    ax.annotate(text, (bar.get_x() + bar.get_width() / 2, top),
                                xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                                fontsize=6.5, rotation=90)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([rio.CASE_TITLES.get(c, c) for c in cases], rotation=20, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


# ---- bench.json ----


def plot_metadata_gpu_us(bench, out):
    methods = rio.bench_methods(bench)
    if not methods:
        return out.skip("metadata_gpu_us", "bench.json has no metadata entries")
    fig, axes = plt.subplots(len(methods), 1, figsize=(12, 4.6 * len(methods)), squeeze=False)
    for ax, method in zip(axes[:, 0], methods):
        med = rio.bench_table(bench, method, "gpu_us_median")
        p10 = rio.bench_table(bench, method, "gpu_us_p10")
        p90 = rio.bench_table(bench, method, "gpu_us_p90")
        speedup = rio.bench_table(bench, method, "speedup_vs_chain")
        samples = rio.bench_table(bench, method, "samples")
        cases = rio.ordered(med.keys(), rio.CASES)
        impls = rio.ordered({i for row in med.values() for i in row}, rio.IMPLS)
        errors = {c: {i: (p10.get(c, {}).get(i, v), p90.get(c, {}).get(i, v)) for i, v in med[c].items()}
                  for c in cases}

        def label(case, impl):
            s = speedup.get(case, {}).get(impl)
            if impl == "chain" or s is None:
                return f"{med[case][impl]:.1f}"
            return f"{med[case][impl]:.1f} ({s:.2f}x)"

        grouped_bars(ax, med, impls, cases, label_fn=label, errors=errors)
        floor = bench.get("floor_us", {}).get(method)
        if floor is not None:
            ax.axhline(float(floor), color="#555555", ls="--", lw=1,
                       label=f"floor: one empty {method} launch, {float(floor):.1f} us")
        n = sorted({int(v) for row in samples.values() for v in row.values()})
        sample_note = f", {n[0]}-{n[-1]} samples" if len(n) > 1 else (f", {n[0]} samples" if n else "")
        ax.set_title(f"Metadata GPU time per step case, {method} (median, bars p10-p90{sample_note}); "
                     "labels: median us (speedup vs chain)", fontsize=10)
        ax.set_ylabel("GPU us per builder suite")
        ax.set_ylim(top=ax.get_ylim()[1] * 1.25)
        ax.legend(fontsize=8, ncol=len(impls) + 1, loc="upper left")
    fig.suptitle(_bench_title(bench), fontsize=9)
    out.save(fig, "metadata_gpu_us")


def plot_launches(bench, out):
    methods = [m for m in rio.bench_methods(bench) if rio.bench_table(bench, m, "launches")]
    if not methods:
        return out.skip("launches_per_suite", "bench.json metadata entries have no 'launches'")
    fig, axes = plt.subplots(len(methods), 1, figsize=(12, 4.2 * len(methods)), squeeze=False)
    for ax, method in zip(axes[:, 0], methods):
        launches = rio.bench_table(bench, method, "launches")
        cases = rio.ordered(launches.keys(), rio.CASES)
        impls = rio.ordered({i for row in launches.values() for i in row}, rio.IMPLS)
        grouped_bars(ax, launches, impls, cases, label_fn=lambda c, i: f"{int(launches[c][i])}")
        how = {"graph": "kernel and memcpy nodes of the captured graph", "eager": "launches issued"}.get(method, method)
        ax.set_title(f"Launches per builder suite, {method} ({how})", fontsize=10)
        ax.set_ylabel("launches")
        ax.set_ylim(top=ax.get_ylim()[1] * 1.2)
        ax.legend(fontsize=8, ncol=len(impls), loc="upper left")
    fig.suptitle(_bench_title(bench), fontsize=9)
    out.save(fig, "launches_per_suite")


def _mismatch_figure(tables, cases, impls, title, out, stem, unit):
    """One panel per kind of difference; tables[kind][case][impl] = count of `unit`."""
    fig, axes = plt.subplots(len(rio.MISMATCH_KINDS), 1, figsize=(12, 3.4 * len(rio.MISMATCH_KINDS)),
                             squeeze=False)
    names = {"stale_host": "stale-host divergence", "padding_residue": "padding residue", "bug": "bugs"}
    for ax, kind in zip(axes[:, 0], rio.MISMATCH_KINDS):
        table = tables[kind]
        grouped_bars(ax, table, impls, cases, label_fn=lambda c, i, t=table: f"{int(t[c][i])}")
        total = sum(int(v) for row in table.values() for v in row.values())
        ax.set_title(f"{names[kind]} (total {total})", fontsize=10)
        ax.set_ylabel(unit)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        top = max([float(v) for row in table.values() for v in row.values()] + [1.0])
        ax.set_ylim(0, top * 1.3)
        ax.legend(fontsize=8, ncol=len(impls), loc="upper left")
    fig.suptitle(title, fontsize=10)
    out.save(fig, stem)


def plot_bench_mismatches(bench, out):
    methods = rio.bench_methods(bench)
    method = next((m for m in methods if any(rio.bench_table(bench, m, k) for k in rio.MISMATCH_KINDS)), None)
    if method is None:
        return out.skip("stale_host_divergence_bench",
                        "bench.json metadata entries have no stale_host / padding_residue / bug counts")
    tables = {k: rio.bench_table(bench, method, k) for k in rio.MISMATCH_KINDS}
    cases = rio.ordered({c for t in tables.values() for c in t}, rio.CASES)
    impls = rio.ordered({i for t in tables.values() for row in t.values() for i in row}, rio.IMPLS)
    _mismatch_figure(tables, cases, impls,
                     f"Metadata differences from the reference per implementation and case (bench, {method})",
                     out, "stale_host_divergence_bench", "differing cells")


def plot_bench_tpot(bench, out):
    entries = bench.get("tpot", [])
    if not entries:
        return out.skip("tpot_by_mode", "bench.json has no tpot entries")
    modes = rio.ordered({e["mode"] for e in entries}, rio.MODES)
    impls = rio.ordered({e["impl"] for e in entries}, rio.IMPLS)
    table = {m: {} for m in modes}
    for e in entries:
        table[e["mode"]][e["impl"]] = float(e["tpot_ms"])
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(impls)
    for j, impl in enumerate(impls):
        for i, mode in enumerate(modes):
            v = table[mode].get(impl)
            if v is None:
                continue
            x = i - 0.4 + width * (j + 0.5)
            ax.bar(x, v, width * 0.92, color=impl_color(impl), label=impl if i == 0 else None)
            ax.annotate(f"{v:.3f}", (x, v), xytext=(0, 2), textcoords="offset points", ha="center",
                        fontsize=7, rotation=90, va="bottom")
    ax.set_xticks(range(len(modes)))
    ax.set_xticklabels([rio.MODE_TITLES.get(m, m) for m in modes])
    ax.set_ylabel("TPOT [ms/token]")
    ax.set_ylim(top=ax.get_ylim()[1] * 1.2)
    ax.set_title("TPOT-like loop per mode and implementation (bench)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    out.save(fig, "tpot_by_mode")


def _bench_title(bench):
    meta = bench.get("meta", {})
    parts = [str(meta[k]) for k in ("device", "gpu", "driver", "git_sha") if meta.get(k)]
    return "bench.json" + (": " + ", ".join(parts) if parts else "")


def bench_tables(bench):
    """Markdown tables in the seed's layout: µs per case and implementation, speedups, launches."""
    lines = [f"# Metadata benchmark ({_bench_title(bench)})", ""]
    floor = bench.get("floor_us", {})
    if floor:
        lines += ["Floor (an empty launch, same method, same run): "
                  + ", ".join(f"{k} {float(v):.2f} us" for k, v in floor.items()), ""]
    for method in rio.bench_methods(bench):
        med = rio.bench_table(bench, method, "gpu_us_median")
        speed = rio.bench_table(bench, method, "speedup_vs_chain")
        launches = rio.bench_table(bench, method, "launches")
        cases = rio.ordered(med.keys(), rio.CASES)
        impls = rio.ordered({i for row in med.values() for i in row}, rio.IMPLS)
        lines += [f"## GPU us per builder suite, {method} (median; speedup vs chain)", ""]
        lines.append("| Case | " + " | ".join(impls) + " |")
        lines.append("|---|" + "---:|" * len(impls))
        for c in cases:
            cells = []
            for i in impls:
                v = med[c].get(i)
                s = speed.get(c, {}).get(i)
                cells.append("" if v is None else (f"{v:.2f}" if i == "chain" or s is None else f"{v:.2f} ({s:.2f}x)"))
            lines.append(f"| {rio.CASE_TITLES.get(c, c)} | " + " | ".join(cells) + " |")
        lines.append("")
        if launches:
            lines += [f"## Launches per builder suite, {method}", "", "| Case | " + " | ".join(impls) + " |",
                      "|---|" + "---:|" * len(impls)]
            for c in cases:
                lines.append(f"| {rio.CASE_TITLES.get(c, c)} | "
                             + " | ".join(str(launches.get(c, {}).get(i, "")) for i in impls) + " |")
            lines.append("")
    tpot = bench.get("tpot", [])
    if tpot:
        modes = rio.ordered({e["mode"] for e in tpot}, rio.MODES)
        impls = rio.ordered({e["impl"] for e in tpot}, rio.IMPLS)
        value = {(e["mode"], e["impl"]): float(e["tpot_ms"]) for e in tpot}
        lines += ["## TPOT [ms/token] per mode", "", "| Mode | " + " | ".join(impls) + " |",
                  "|---|" + "---:|" * len(impls)]
        for m in modes:
            lines.append(f"| {rio.MODE_TITLES.get(m, m)} | "
                         + " | ".join(f"{value[(m, i)]:.3f}" if (m, i) in value else "" for i in impls) + " |")
        lines.append("")
    return "\n".join(lines)


# ---- sweep.jsonl ----

SERVING_METRICS = [
    ("mean_tpot_ms", "TPOT [ms/token]"),
    ("mean_ttft_ms", "TTFT [ms]"),
    ("output_throughput", "Output throughput [tok/s]"),
    ("mean_acceptance_length", "Mean acceptance length"),
]
# Percentile keys drawn beside a mean: the p50-p99 band and the p90 line.
PERCENTILES = {"mean_tpot_ms": "tpot", "mean_ttft_ms": "ttft"}


def plot_serving(rows, out, sweep_dir):
    groups = rio.sweep_groups(rows)
    if not groups:
        n_failed = sum(1 for r in rows if r.get("status") == "failed")
        return out.skip("serving_vs_concurrency", f"{sweep_dir}/sweep.jsonl has no ok rows "
                        f"({len(rows)} rows, {n_failed} failed)")
    for title, slug, members in groups:
        modes = rio.ordered({r["mode"] for r in members}, rio.MODES)
        impls = rio.ordered({r["impl"] for r in members}, rio.IMPLS)
        concurrencies = sorted({r["concurrency"] for r in members})
        metrics = [(k, t) for k, t in SERVING_METRICS
                   if k != "mean_acceptance_length" or any(m != "none" for m in modes)]
        ncols = 2
        nrows = (len(metrics) + ncols - 1) // ncols
        fig, axes = plt.subplots(nrows, ncols, figsize=(11, 4.0 * nrows), squeeze=False)
        for ax in axes.flat[len(metrics):]:
            ax.set_visible(False)
        for ax, (key, label) in zip(axes.flat, metrics):
            for mode in modes:
                if key == "mean_acceptance_length" and mode == "none":
                    continue
                style, marker = MODE_STYLES.get(mode, ("-.", "x"))
                for impl in impls:
                    sel = sorted((r for r in members if r["mode"] == mode and r["impl"] == impl
                                  and r.get(key) is not None), key=lambda r: r["concurrency"])
                    if not sel:
                        continue
                    xs = [max(r["concurrency"], 0.5) for r in sel]
                    ax.plot(xs, [r[key] for r in sel], ls=style, marker=marker,
                            color=impl_color(impl), ms=4, lw=1.3)
                    metric = PERCENTILES.get(key)
                    # p50 is the median (older rows have only median_*).
                    for r in sel:
                        if metric and r.get(f"p50_{metric}_ms") is None:
                            r[f"p50_{metric}_ms"] = r.get(f"median_{metric}_ms")
                    if metric and all(r.get(f"p50_{metric}_ms") is not None and r.get(f"p99_{metric}_ms")
                                      is not None for r in sel):
                        ax.fill_between(xs, [r[f"p50_{metric}_ms"] for r in sel],
                                        [r[f"p99_{metric}_ms"] for r in sel], color=impl_color(impl),
                                        alpha=0.06, lw=0)
                        if all(r.get(f"p90_{metric}_ms") is not None for r in sel):
                            ax.plot(xs, [r[f"p90_{metric}_ms"] for r in sel], ls=":", lw=0.9,
                                    color=impl_color(impl))
            ax.set_xscale("log", base=2)
            ax.set_xticks([max(c, 0.5) for c in concurrencies])
            ax.set_xticklabels([str(c) if c > 0 else "none" for c in concurrencies])
            ax.set_xlabel("concurrency")
            ax.set_title(label + (": mean (line), p50-p99 (band), p90 (dotted)" if key in PERCENTILES else ""),
                         fontsize=10)
            if key == "mean_acceptance_length":
                ax.set_ylim(1, max([r.get(key) or 1 for r in members] + [2]) * 1.1)
            elif all((r.get(key) or 0) > 0 for r in members if r.get(key) is not None):
                ax.set_yscale("log")
                _label_log_axis(ax)
            ax.grid(alpha=0.3, which="both")
        counts = _request_counts(members)
        if len(set(counts.values())) > 1:
            for c, n in counts.items():
                axes.flat[0].annotate(f"n={n}", (max(c, 0.5), 0), xycoords=("data", "axes fraction"),
                                      xytext=(0, 3), textcoords="offset points", ha="center",
                                      fontsize=7, color="#aa3300")
            note = "request counts differ: " + "; ".join(
                f"{n} at concurrency {', '.join(str(c) for c in cs)}" for n, cs in _by_count(counts))
            print(f"plot_all: serving_vs_concurrency_{slug}: {note}")
            title += f" ({note})"
        handles = [Line2D([], [], color=impl_color(i), lw=2, label=i) for i in impls]
        handles += [Line2D([], [], color="#333333", ls=MODE_STYLES.get(m, ("-.", "x"))[0],
                           marker=MODE_STYLES.get(m, ("-.", "x"))[1], label=rio.MODE_TITLES.get(m, m))
                    for m in modes]
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8)
        executors = sorted({str(r.get("executor", "?")) for r in members})
        fig.suptitle(f"Serving metrics vs concurrency: {title} (executor {', '.join(executors)})", fontsize=11)
        out.save(fig, f"serving_vs_concurrency_{slug}")


RELATIVE_METRICS = [
    ("mean_tpot_ms", "Mean TPOT vs chain [%]"),
    ("mean_ttft_ms", "Mean TTFT vs chain [%]"),
    ("output_throughput", "Output throughput vs chain [%]"),
]


def plot_serving_vs_chain(rows, out):
    """Each implementation's change against chain at the same point: 100 * (x / chain - 1)."""
    for title, slug, members in rio.sweep_groups(rows):
        impls = [i for i in rio.ordered({r["impl"] for r in members}, rio.IMPLS) if i != "chain"]
        if "chain" not in {r["impl"] for r in members} or not impls:
            out.skip(f"serving_vs_chain_{slug}", "the sweep has no chain points (or nothing else) to compare")
            continue
        modes = rio.ordered({r["mode"] for r in members}, rio.MODES)
        concurrencies = sorted({r["concurrency"] for r in members})
        chain = {(r["concurrency"], r["mode"]): r for r in members if r["impl"] == "chain"}
        fig, axes = plt.subplots(1, len(RELATIVE_METRICS), figsize=(15, 4.2), squeeze=False)
        for ax, (key, label) in zip(axes[0], RELATIVE_METRICS):
            for mode in modes:
                style, marker = MODE_STYLES.get(mode, ("-.", "x"))
                for impl in impls:
                    pts = []
                    for r in members:
                        base = chain.get((r["concurrency"], mode), {}).get(key)
                        if r["mode"] == mode and r["impl"] == impl and r.get(key) is not None and base:
                            pts.append((r["concurrency"], 100.0 * (r[key] / base - 1.0)))
                    pts.sort()
                    if pts:
                        ax.plot([max(c, 0.5) for c, _ in pts], [v for _, v in pts], ls=style, marker=marker,
                                color=impl_color(impl), ms=4, lw=1.3)
            ax.axhline(0, color="#555555", lw=0.8)
            ax.set_xscale("log", base=2)
            ax.set_xticks([max(c, 0.5) for c in concurrencies])
            ax.set_xticklabels([str(c) if c > 0 else "none" for c in concurrencies])
            ax.set_xlabel("concurrency")
            ax.set_title(label + (" (lower is better)" if key != "output_throughput" else " (higher is better)"),
                         fontsize=10)
            ax.grid(alpha=0.3)
        handles = [Line2D([], [], color=impl_color(i), lw=2, label=i) for i in impls]
        handles += [Line2D([], [], color="#333333", ls=MODE_STYLES.get(m, ("-.", "x"))[0],
                           marker=MODE_STYLES.get(m, ("-.", "x"))[1], label=rio.MODE_TITLES.get(m, m))
                    for m in modes]
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8)
        fig.suptitle(f"Change against chain at the same point: {title}", fontsize=11)
        out.save(fig, f"serving_vs_chain_{slug}")


def _request_counts(members):
    """{concurrency: requests} of a group's points (the request count each point replayed)."""
    out = {}
    for r in members:
        out.setdefault(r["concurrency"], r.get("requests", r.get("num_requests")))
    return dict(sorted(out.items()))


def _by_count(counts):
    groups = {}
    for c, n in counts.items():
        groups.setdefault(n, []).append(c)
    return sorted(groups.items(), key=lambda kv: kv[1][0])


def _tick_label(v, _=None):
    """3 significant digits; thousands as k (4k, 200k), never an exponent."""
    return f"{v / 1000:.3g}k" if v >= 1000 else f"{v:.3g}"


def _label_log_axis(ax):
    """Labelled ticks on a log y axis: 1-2-5 steps, or 1..9 when fewer than four of those fit."""
    lo, hi = ax.get_ylim()
    if not (lo > 0 and hi > lo):
        return
    for leads in ((1, 2, 5), (1, 2, 3, 5, 7), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [lead * 10.0 ** e for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                 for lead in leads]
        ticks = [t for t in ticks if lo <= t <= hi]
        if len(ticks) >= 4:
            break
    if len(ticks) < 4:  # less than a factor of 2 in range: evenly spaced values
        ticks = [lo * (hi / lo) ** (i / 4) for i in range(5)]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(_tick_label))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _fmt(v, digits):
    return "" if v is None else f"{v:.{digits}f}"


def serving_tables(rows):
    """The seed's SPEED-Bench tables per group and mode: each implementation vs chain."""
    lines = ["# Serving metrics from the sweep", ""]
    specs = [("mean_ttft_ms", "Mean TTFT [ms]", 3, "lower"),
             ("mean_tpot_ms", "Mean TPOT [ms/token]", 3, "lower"),
             ("output_throughput", "Output throughput [tok/s]", 1, "higher"),
             ("mean_acceptance_length", "Mean acceptance length", 3, None)]
    for title, _, members in rio.sweep_groups(rows):
        for mode in rio.ordered({r["mode"] for r in members}, rio.MODES):
            impls = rio.ordered({r["impl"] for r in members if r["mode"] == mode}, rio.IMPLS)
            value = {(r["concurrency"], r["impl"]): r for r in members if r["mode"] == mode}
            concurrencies = sorted({c for c, _ in value})
            base = "chain" if "chain" in impls else None
            for key, label, digits, better in specs:
                if key == "mean_acceptance_length" and mode == "none":
                    continue
                head = list(impls)
                if base and better:
                    word = "reduction vs chain" if better == "lower" else "speedup vs chain"
                    head += [f"{i} {word}" for i in impls if i != base]
                lines += [f"## {title}, {rio.MODE_TITLES.get(mode, mode)}: {label}", "",
                          "| Concurrency | " + " | ".join(head) + " |", "|---:|" + "---:|" * len(head)]
                for c in concurrencies:
                    cells = [_fmt(value.get((c, i), {}).get(key), digits) for i in impls]
                    if base and better:
                        b = value.get((c, base), {}).get(key)
                        for i in impls:
                            if i == base:
                                continue
                            v = value.get((c, i), {}).get(key)
                            if v is None or not b:
                                cells.append("")
                            elif better == "lower":
                                cells.append(f"{100.0 * (b - v) / b:.2f}%")
                            else:
                                cells.append(f"{v / b:.3f}x")
                    lines.append(f"| {c} | " + " | ".join(cells) + " |")
                lines.append("")
    skipped = [r for r in rows if r.get("status") == "skipped"]
    failed = [r for r in rows if r.get("status") == "failed"]
    if skipped or failed:
        lines += ["## Points not in the tables", ""]
        for r in skipped:
            lines.append(f"- skipped {r['point_id']}: {r.get('reason', '')}")
        for r in failed:
            lines.append(f"- FAILED {r['point_id']}: {r.get('error', '')}")
        lines.append("")
    return "\n".join(lines)


# ---- A run folder ----

MAX_RAW_STEPS = 4000  # more steps than this are drawn as per-time-bin mean and min-max


def plot_steps_over_time(run_dir, out):
    try:
        steps = rio.read_steps(run_dir)
    except rio.InputError as e:
        return out.skip("steps_over_time", str(e))
    if not steps["start_s"]:
        return out.skip("steps_over_time", f"{run_dir}/steps.csv has no steps")
    fig, axes = plt.subplots(2, 1, figsize=(12, 6.5), sharex=True)
    t = steps["start_s"]
    n = len(t)
    panels = [(axes[0], "num_reqs_real", "num_reqs", "batch size [requests]"),
              (axes[1], "num_tokens_real", "num_tokens", "tokens per step [tokens]")]
    if n <= MAX_RAW_STEPS:
        for ax, real, padded, label in panels:
            # Padded dashed and orange, real solid black: distinguishable where they part.
            ax.step(t, steps[padded], where="post", color="#e08a00", ls="--", lw=1.0,
                    label="padded (CUDA graph)")
            ax.step(t, steps[real], where="post", color="#222222", lw=0.8, label="real")
            ax.set_ylabel(label)
        # Verification (and other) steps as large hollow rings under the small draft dots, so
        # neither hides the other where they alternate.
        for case in rio.ordered(set(steps["case"]), rio.CASES):
            idx = [i for i, c in enumerate(steps["case"]) if c == case]
            draft = "draft" in case
            axes[1].scatter([t[i] for i in idx], [steps["num_tokens_real"][i] for i in idx],
                            s=4 if draft else 22, facecolors=CASE_COLORS.get(case, "#7f8c8d") if draft else "none",
                            edgecolors=CASE_COLORS.get(case, "#7f8c8d"), linewidths=0.8,
                            label=rio.CASE_TITLES.get(case, case), zorder=4 if draft else 3)
        note = f"{n} steps"
    else:
        bins = 1000
        t0, t1 = t[0], t[-1] if t[-1] > t[0] else t[0] + 1.0
        for ax, real, padded, label in panels:
            sums, counts = [0.0] * bins, [0] * bins
            lo, hi = [math.inf] * bins, [-math.inf] * bins
            for ti, v in zip(t, steps[real]):
                b = min(int((ti - t0) / (t1 - t0) * bins), bins - 1)
                sums[b] += v
                counts[b] += 1
                lo[b] = min(lo[b], v)
                hi[b] = max(hi[b], v)
            # Empty bins are NaN, so neither curve bridges a stretch without step starts.
            centers = [t0 + (b + 0.5) * (t1 - t0) / bins for b in range(bins)]
            nan = float("nan")
            ax.fill_between(centers, [lo[b] if counts[b] else nan for b in range(bins)],
                            [hi[b] if counts[b] else nan for b in range(bins)], color="#bbbbbb", step="mid",
                            label="min-max in bin")
            ax.step(centers, [sums[b] / counts[b] if counts[b] else nan for b in range(bins)], where="mid",
                    color="#222222", lw=0.8, label="mean in bin (real)")
            ax.set_ylabel(label)
        note = f"{n} steps in {bins} time bins"
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2, loc="upper right")
    axes[1].legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    axes[1].set_xlabel("simulated time [s]")
    title = _run_title(run_dir)
    fig.suptitle(f"Batch size and tokens per step over time ({note}): {title}", fontsize=10)
    out.save(fig, "steps_over_time")


def _run_title(run_dir):
    try:
        s = rio.read_summary(run_dir)
    except rio.InputError:
        return run_dir
    cfg, wl = s.get("config", {}), s.get("workload", {})
    name = wl.get("preset") or os.path.basename(str(wl.get("path", ""))) or "?"
    return (f"{name}, mode {cfg.get('mode', '?')}, time-impl {cfg.get('time_impl', '?')}, "
            f"concurrency {wl.get('concurrency', '?')}, {wl.get('requests', '?')} requests")


def plot_acceptance(run_dir, out):
    try:
        lengths = rio.read_acceptance_lengths(run_dir)
    except rio.InputError as e:
        return out.skip("acceptance_length", str(e))
    if not lengths:
        return out.skip("acceptance_length", f"{run_dir}/requests.csv: no request verified drafts (mode none?)")
    summary = {}
    try:
        summary = rio.read_summary(run_dir)
    except rio.InputError:
        pass
    k = int(summary.get("config", {}).get("spec_k", 5))
    fig, ax = plt.subplots(figsize=(8, 4.2))
    edges = [1 + i * 0.125 for i in range(int(k * 8) + 2)]
    ax.hist(lengths, bins=edges, color="#2471a3", edgecolor="white", lw=0.4)
    mean = sum(lengths) / len(lengths)
    ax.axvline(mean, color="#c0392b", ls="-", lw=1.2, label=f"mean of requests {mean:.3f}")
    agg = summary.get("metrics", {}).get("speculative", {}).get("mean_acceptance_length")
    if agg:
        ax.axvline(agg, color="#229954", ls="--", lw=1.2,
                   label=f"vLLM aggregate 1 + accepted/verifications {agg:.3f}")
    ax.set_xlabel(f"acceptance length per request (1 + accepted drafts / verifications, K = {k})")
    ax.set_ylabel("requests")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(1, k + 1)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"Acceptance length distribution, {len(lengths)} requests: {_run_title(run_dir)}", fontsize=9)
    out.save(fig, "acceptance_length")


def plot_run_mismatches(run_dir, out):
    try:
        counts = rio.metadata_check_by_case(rio.read_summary(run_dir), os.path.join(run_dir, "summary.json"))
    except rio.InputError as e:
        return out.skip("stale_host_divergence_run", str(e))
    impls = rio.ordered(counts.keys(), rio.IMPLS)
    cases = rio.ordered({c for per in counts.values() for c in per}, rio.CASES)
    tables = {k: {c: {i: counts[i][c][k] for i in impls if c in counts[i]} for c in cases}
              for k in rio.MISMATCH_KINDS}
    _mismatch_figure(tables, cases, impls,
                     f"Metadata differences per implementation and step case (metadata check): {_run_title(run_dir)}",
                     out, "stale_host_divergence_run", "steps with a difference")


# ---- main ----


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

    bench_plots = ["metadata_gpu_us", "launches_per_suite", "stale_host_divergence_bench", "tpot_by_mode"]
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
            plot_metadata_gpu_us(bench, out)
            plot_launches(bench, out)
            plot_bench_mismatches(bench, out)
            plot_bench_tpot(bench, out)
            out.text("metadata_tables.md", bench_tables(bench))

    if sweep_dir is None:
        out.skip("serving_vs_concurrency", f"no sweep.jsonl under {results_dir}")
    else:
        try:
            rows = rio.read_sweep(sweep_dir)
        except rio.InputError as e:
            out.skip("serving_vs_concurrency", str(e))
        else:
            plot_serving(rows, out, sweep_dir)
            plot_serving_vs_chain(rows, out)
            out.text("serving_tables.md", serving_tables(rows))
            if run_dir is None:
                run_dir = _sweep_point_for_run_plots(sweep_dir, rows)
                mismatch_dir, why = _sweep_point_that_checked_every_impl(sweep_dir, rows)

    no_run = f"no run folder (summary.json, steps.csv, requests.csv) under {results_dir}"
    if run_dir is None:
        for p in ["steps_over_time", "acceptance_length"]:
            out.skip(p, no_run)
    else:
        print(f"plot_all: run plots from {run_dir}")
        plot_steps_over_time(run_dir, out)
        plot_acceptance(run_dir, out)
    if mismatch_dir is not None:
        plot_run_mismatches(mismatch_dir, out)
    else:
        out.skip("stale_host_divergence_run", why or no_run)
    return out, found


def _sweep_point_that_checked_every_impl(sweep_dir, rows):
    """(folder, None) of an ok point whose metadata check ran every implementation of the
    sweep, or (None, why) when none did: a point checks only its own implementation unless the
    sweep ran with --check-impl all, and its panels would be zero for every other one."""
    impls = {r.get("impl") for r in rio.ok_rows(rows)}
    for r in sorted(rio.ok_rows(rows), key=lambda r: -(r.get("concurrency") or 0)):
        checked = set(str(r.get("check_impls") or "").split(";"))
        folder = os.path.join(sweep_dir, r.get("out", ""))
        if r.get("check") and impls <= checked and os.path.isfile(os.path.join(folder, "summary.json")):
            print(f"plot_all: stale-host plot from sweep point {r['point_id']} (checked {', '.join(sorted(checked))})")
            return folder, None
    return None, (f"no point of {sweep_dir} checked every implementation ({', '.join(sorted(map(str, impls)))}); "
                  "rerun the sweep with --check-impl all, or pass --run DIR of a run with --impl all")


def _sweep_point_for_run_plots(sweep_dir, rows):
    """A sweep's point folder for the one-run plots: the highest concurrency, adaptive, fused."""
    def score(r):
        return (r.get("mode") == "adaptive", r.get("impl") == "fused", r.get("concurrency", 0))
    for r in sorted(rio.ok_rows(rows), key=score, reverse=True):
        folder = os.path.join(sweep_dir, r.get("out", ""))
        if os.path.isfile(os.path.join(folder, "steps.csv")):
            print(f"plot_all: no standalone run folder; using sweep point {r['point_id']}")
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
    out, found = make_all(args.results_dir, out_dir, args.sweep, args.run, args.bench)
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
