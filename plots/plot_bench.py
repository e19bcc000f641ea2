"""The plots and tables of a bench folder (bench.json): metadata GPU time and launches per step
case and implementation, the differences from the reference, and the TPOT-like loop per mode."""

import matplotlib.pyplot as plt

import results_io as rio
from plot_common import grouped_bars, mismatch_figure


def plot_metadata_gpu_us(bench, reg, out):
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
        impls = reg.ordered({i for row in med.values() for i in row})
        errors = {c: {i: (p10.get(c, {}).get(i, v), p90.get(c, {}).get(i, v)) for i, v in med[c].items()}
                  for c in cases}

        def label(case, impl):
            s = speedup.get(case, {}).get(impl)
            if impl == reg.baseline or s is None or not reg.baseline:
                return f"{med[case][impl]:.1f}"
            return f"{med[case][impl]:.1f} ({s:.2f}x)"

        grouped_bars(ax, med, impls, cases, reg, label_fn=label, errors=errors)
        floor = bench.get("floor_us", {}).get(method)
        if floor is not None:
            ax.axhline(float(floor), color="#555555", ls="--", lw=1,
                       label=f"floor: one empty {method} launch, {float(floor):.1f} us")
        n = sorted({int(v) for row in samples.values() for v in row.values()})
        sample_note = f", {n[0]}-{n[-1]} samples" if len(n) > 1 else (f", {n[0]} samples" if n else "")
        vs = f" (speedup vs {reg.baseline}, the baseline)" if reg.baseline else ""
        ax.set_title(f"Metadata GPU time per step case, {method} (median, bars p10-p90{sample_note}); "
                     f"labels: median us{vs}", fontsize=10)
        ax.set_ylabel("GPU us per builder suite")
        ax.set_ylim(top=ax.get_ylim()[1] * 1.25)
        ax.legend(fontsize=8, ncol=3, loc="upper left")
    fig.suptitle(_bench_title(bench), fontsize=9)
    out.save(fig, "metadata_gpu_us")


def plot_launches(bench, reg, out):
    methods = [m for m in rio.bench_methods(bench) if rio.bench_table(bench, m, "launches")]
    if not methods:
        return out.skip("launches_per_suite", "bench.json metadata entries have no 'launches'")
    fig, axes = plt.subplots(len(methods), 1, figsize=(12, 4.2 * len(methods)), squeeze=False)
    for ax, method in zip(axes[:, 0], methods):
        launches = rio.bench_table(bench, method, "launches")
        cases = rio.ordered(launches.keys(), rio.CASES)
        impls = reg.ordered({i for row in launches.values() for i in row})
        grouped_bars(ax, launches, impls, cases, reg, label_fn=lambda c, i: f"{int(launches[c][i])}")
        how = {"graph": "kernel and memcpy nodes of the captured graph", "eager": "launches issued"}.get(method, method)
        ax.set_title(f"Launches per builder suite, {method} ({how})", fontsize=10)
        ax.set_ylabel("launches")
        ax.set_ylim(top=ax.get_ylim()[1] * 1.2)
        ax.legend(fontsize=8, ncol=3, loc="upper left")
    fig.suptitle(_bench_title(bench), fontsize=9)
    out.save(fig, "launches_per_suite")


def plot_bench_mismatches(bench, reg, out):
    methods = rio.bench_methods(bench)
    method = next((m for m in methods if any(rio.bench_table(bench, m, k) for k in rio.MISMATCH_KINDS)), None)
    if method is None:
        return out.skip("stale_host_divergence_bench",
                        "bench.json metadata entries have no stale_host / padding_residue / bug counts")
    tables = {k: rio.bench_table(bench, method, k) for k in rio.MISMATCH_KINDS}
    cases = rio.ordered({c for t in tables.values() for c in t}, rio.CASES)
    impls = reg.ordered({i for t in tables.values() for row in t.values() for i in row})
    mismatch_figure(tables, cases, impls, reg,
                     f"Metadata differences from the reference per implementation and case (bench, {method})",
                     out, "stale_host_divergence_bench", "differing cells")


def plot_bench_tpot(bench, reg, out):
    entries = bench.get("tpot", [])
    if not entries:
        return out.skip("tpot_by_mode", "bench.json has no tpot entries")
    modes = rio.ordered({e["mode"] for e in entries}, rio.MODES)
    impls = reg.ordered({e["impl"] for e in entries})
    table = {m: {} for m in modes}
    for e in entries:
        table[e["mode"]][e["impl"]] = float(e["tpot_ms"])
    fig, ax = plt.subplots(figsize=(9, 4.6))
    width = 0.8 / len(impls)
    for j, impl in enumerate(impls):
        for i, mode in enumerate(modes):
            v = table[mode].get(impl)
            if v is None:
                continue
            x = i - 0.4 + width * (j + 0.5)
            ax.bar(x, v, width * 0.92, color=reg.color(impl), hatch=reg.hatch(impl) or None, edgecolor="white",
                   linewidth=0, label=reg.label(impl) if i == 0 else None)
            ax.annotate(f"{v:.3f}", (x, v), xytext=(0, 2), textcoords="offset points", ha="center",
                        fontsize=7, rotation=90, va="bottom")
    ax.set_xticks(range(len(modes)))
    ax.set_xticklabels([rio.MODE_TITLES.get(m, m) for m in modes])
    ax.set_ylabel("TPOT [ms/token]")
    ax.set_ylim(top=ax.get_ylim()[1] * 1.2)
    ax.set_title("TPOT-like loop per mode and implementation (bench)", fontsize=10)
    fig.legend(loc="outside lower center", ncol=3, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    out.save(fig, "tpot_by_mode")


def _bench_title(bench):
    meta = bench.get("meta", {})
    parts = [str(meta[k]) for k in ("gpu", "driver", "git_sha", "date_utc") if meta.get(k)]
    return "bench.json" + (": " + ", ".join(parts) if parts else "")
