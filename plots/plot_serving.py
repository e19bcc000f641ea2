"""The plots and tables of a sweep folder (sweep.jsonl): serving metrics against concurrency per
group, mode and implementation, and each implementation's change against the baseline (the
implementation whose role in the result files' registry is baseline; in a DeepSeek-V4 group, which
cannot hold it, the group's vLLM state (a))."""

import matplotlib.pyplot as plt

import results_io as rio
from plot_common import impl_handles, label_log_axis, mode_style


SERVING_METRICS = [
    ("mean_tpot_ms", "TPOT [ms/token]"),
    ("mean_ttft_ms", "TTFT [ms]"),
    ("output_throughput", "Output throughput [tok/s]"),
    ("mean_acceptance_length", "Mean acceptance length"),
]
# Percentile keys drawn beside a mean: the p50-p99 band and the p90 line.
PERCENTILES = {"mean_tpot_ms": "tpot", "mean_ttft_ms": "ttft"}


def plot_serving(rows, reg, out, sweep_dir):
    groups = rio.sweep_groups(rows)
    if not groups:
        n_failed = sum(1 for r in rows if r.get("status") == "failed")
        return out.skip("serving_vs_concurrency", f"{sweep_dir}/sweep.jsonl has no ok rows "
                        f"({len(rows)} rows, {n_failed} failed)")
    for title, slug, members in groups:
        modes = rio.ordered({r["mode"] for r in members}, rio.MODES)
        impls = reg.ordered({r["impl"] for r in members})
        concurrencies = sorted({r["concurrency"] for r in members})
        metrics = [(k, t) for k, t in SERVING_METRICS
                   if k != "mean_acceptance_length" or any(m != "none" for m in modes)]
        # One row per metric, one column per mode (its y axis shared along the row): each panel
        # holds one line per implementation. The p50-p99 band and the p90 line are drawn when a
        # panel has at most two implementations (more bands hide each other; the tables have them).
        bands = len(impls) <= 2
        fig, axes = plt.subplots(len(metrics), len(modes), figsize=(4.6 * len(modes) + 1.0, 3.0 * len(metrics)),
                                 squeeze=False, sharex=True, sharey="row")
        for row, (key, label) in enumerate(metrics):
            for col, mode in enumerate(modes):
                ax = axes[row][col]
                if key == "mean_acceptance_length" and mode == "none":
                    ax.text(0.5, 0.5, "no drafts without DSpark", ha="center", va="center", transform=ax.transAxes,
                            fontsize=8, color="#777777")
                for impl in impls:
                    color, marker = reg.color(impl), reg.marker(impl)
                    sel = sorted((r for r in members if r["mode"] == mode and r["impl"] == impl
                                  and r.get(key) is not None), key=lambda r: r["concurrency"])
                    if not sel or (key == "mean_acceptance_length" and mode == "none"):
                        continue
                    xs = [max(r["concurrency"], 0.5) for r in sel]
                    ax.plot(xs, [r[key] for r in sel], marker=marker, color=color, ms=5, lw=1.3)
                    metric = PERCENTILES.get(key)
                    # p50 is the median (older rows have only median_*).
                    for r in sel:
                        if metric and r.get(f"p50_{metric}_ms") is None:
                            r[f"p50_{metric}_ms"] = r.get(f"median_{metric}_ms")
                    if bands and metric and all(r.get(f"p50_{metric}_ms") is not None
                                                and r.get(f"p99_{metric}_ms") is not None for r in sel):
                        ax.fill_between(xs, [r[f"p50_{metric}_ms"] for r in sel],
                                        [r[f"p99_{metric}_ms"] for r in sel], color=color, alpha=0.12, lw=0)
                        if all(r.get(f"p90_{metric}_ms") is not None for r in sel):
                            ax.plot(xs, [r[f"p90_{metric}_ms"] for r in sel], ls=":", lw=0.9, color=color)
                ax.set_xscale("log", base=2)
                ax.set_xticks([max(c, 0.5) for c in concurrencies])
                ax.set_xticklabels([str(c) if c > 0 else "none" for c in concurrencies])
                ax.grid(alpha=0.3, which="both")
                if row == 0:
                    ax.set_title(rio.MODE_TITLES.get(mode, mode), fontsize=10, fontweight="bold")
                if row == len(metrics) - 1:
                    ax.set_xlabel("concurrency")
                if col == 0:
                    what = " (mean; p50-p99 band, p90 dotted)" if bands and key in PERCENTILES else " (mean)" \
                        if key in PERCENTILES else ""
                    ax.set_ylabel(label + what, fontsize=8)
            row_values = [r.get(key) for r in members if r.get(key) is not None]
            if key == "mean_acceptance_length":
                axes[row][0].set_ylim(1, max(row_values + [2]) * 1.1)
            elif row_values and all(v > 0 for v in row_values):
                for ax in axes[row]:
                    ax.set_yscale("log")
                label_log_axis(axes[row][0])
        counts = _request_counts(members)
        if len(set(counts.values())) > 1:
            for c, n in counts.items():
                axes[0][0].annotate(f"n={n}", (max(c, 0.5), 0), xycoords=("data", "axes fraction"),
                                      xytext=(0, 3), textcoords="offset points", ha="center",
                                      fontsize=7, color="#aa3300")
            note = "request counts differ: " + "; ".join(
                f"{n} at concurrency {', '.join(str(c) for c in cs)}" for n, cs in _by_count(counts))
            print(f"plot_all: serving_vs_concurrency_{slug}: {note}")
            title += f" ({note})"
        fig.legend(handles=impl_handles(reg, impls), loc="outside lower center", ncol=min(len(impls), 5), fontsize=8)
        executors = sorted({str(r.get("executor", "?")) for r in members})
        fig.suptitle(f"Serving metrics vs concurrency: {title} (executor {', '.join(executors)})", fontsize=11)
        out.save(fig, f"serving_vs_concurrency_{slug}")


RELATIVE_METRICS = [
    ("mean_tpot_ms", "Mean TPOT"),
    ("mean_ttft_ms", "Mean TTFT"),
    ("output_throughput", "Output throughput"),
]


def plot_serving_vs_baseline(rows, reg, out):
    """Each implementation's change against the baseline at the same point: 100 * (x / base - 1)."""
    for title, slug, members in rio.sweep_groups(rows):
        stem = f"serving_vs_baseline_{slug}"
        present = {r["impl"] for r in members}
        base_name = reg.baseline_of(present) or reg.baseline
        if base_name is None:
            out.skip(stem, reg.why_no_baseline())
            continue
        impls = [i for i in reg.ordered(present) if i != base_name]
        if base_name not in present or not impls:
            have = ", ".join(reg.ordered(present))
            out.skip(stem, f"the sweep group {title} has {'no point of the baseline ' + base_name if base_name not in present else 'only the baseline'} "
                     f"(its implementations: {have}); sweep --time-impl with {base_name} and at least one other")
            continue
        modes = rio.ordered({r["mode"] for r in members}, rio.MODES)
        concurrencies = sorted({r["concurrency"] for r in members})
        base = {(r["concurrency"], r["mode"]): r for r in members if r["impl"] == base_name}
        fig, axes = plt.subplots(1, len(RELATIVE_METRICS), figsize=(15, 4.6), squeeze=False)
        for ax, (key, label) in zip(axes[0], RELATIVE_METRICS):
            for mode in modes:
                for impl in impls:
                    pts = []
                    for r in members:
                        b = base.get((r["concurrency"], mode), {}).get(key)
                        if r["mode"] == mode and r["impl"] == impl and r.get(key) is not None and b:
                            pts.append((r["concurrency"], 100.0 * (r[key] / b - 1.0)))
                    pts.sort()
                    if pts:
                        ax.plot([max(c, 0.5) for c, _ in pts], [v for _, v in pts], ls=mode_style(mode),
                                marker=reg.marker(impl), color=reg.color(impl), ms=5, lw=1.3,
                                mfc="white" if mode == "none" else reg.color(impl))
            ax.axhline(0, color="#555555", lw=0.8)
            ax.set_xscale("log", base=2)
            ax.set_xticks([max(c, 0.5) for c in concurrencies])
            ax.set_xticklabels([str(c) if c > 0 else "none" for c in concurrencies])
            ax.set_xlabel("concurrency")
            better = "lower" if key != "output_throughput" else "higher"
            ax.set_title(f"{label} vs {base_name} [%] ({better} is better)", fontsize=10)
            ax.grid(alpha=0.3)
        handles = impl_handles(reg, impls, modes)
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4), fontsize=8)
        fig.suptitle(f"Change against the baseline, {reg.label(base_name).split(',')[0]}, at the same point: {title}",
                     fontsize=11)
        out.save(fig, stem)


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


def _fmt(v, digits):
    return "" if v is None else f"{v:.{digits}f}"


def serving_tables(rows, reg):
    """The seed's SPEED-Bench tables per group and mode: each implementation vs the baseline."""
    lines = ["# Serving metrics from the sweep", ""]
    specs = [("mean_ttft_ms", "Mean TTFT [ms]", 3, "lower"),
             ("mean_tpot_ms", "Mean TPOT [ms/token]", 3, "lower"),
             ("output_throughput", "Output throughput [tok/s]", 1, "higher"),
             ("mean_acceptance_length", "Mean acceptance length", 3, None)]
    for title, _, members in rio.sweep_groups(rows):
        for mode in rio.ordered({r["mode"] for r in members}, rio.MODES):
            impls = reg.ordered({r["impl"] for r in members if r["mode"] == mode})
            value = {(r["concurrency"], r["impl"]): r for r in members if r["mode"] == mode}
            concurrencies = sorted({c for c, _ in value})
            base = reg.baseline_of(impls)
            for key, label, digits, better in specs:
                if key == "mean_acceptance_length" and mode == "none":
                    continue
                head = list(impls)
                if base and better:
                    word = f"reduction vs {base}" if better == "lower" else f"speedup vs {base}"
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
