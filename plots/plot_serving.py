"""The plots and tables of a sweep folder (sweep.jsonl): serving metrics against concurrency per
group, mode and implementation, and each implementation's change against chain."""

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

import results_io as rio
from plot_common import MODE_STYLES, impl_color, label_log_axis


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
                label_log_axis(ax)
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
