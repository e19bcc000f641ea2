"""What every plot module shares: the Agg backend and byte-stable settings, fixed styles per mode
and step case, the atomic file writer, grouped bars, the mismatch figure and labelled log axes
(plots/plot_all.py makes the plots). Each implementation's colour, hatch and marker come from the
result files (results_io.ImplRegistry), never from a list here."""

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


# Line style per mode, the same in every plot (an implementation has its colour and marker).
MODE_STYLES = {"none": ":", "dspark": "--", "adaptive": "-"}
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


def mode_style(mode):
    return MODE_STYLES.get(mode, "-.")


def impl_handles(reg, impls, modes=()):
    """Legend entries: one per implementation (colour and marker), then one per mode (style)."""
    handles = [Line2D([], [], color=reg.color(i), marker=reg.marker(i), lw=2, ms=6, label=reg.label(i))
               for i in impls]
    handles += [Line2D([], [], color="#333333", ls=mode_style(m), lw=1.5, label=rio.MODE_TITLES.get(m, m))
                for m in modes]
    return handles


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


def grouped_bars(ax, table, impls, cases, reg, label_fn=None, errors=None):
    """Bars of table[case][impl], grouped by case, one colour and hatch per implementation."""
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
        bars = ax.bar(xs, heights, width * 0.92, color=reg.color(impl), hatch=reg.hatch(impl) or None,
                      edgecolor="white", linewidth=0, label=reg.label(impl),
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


def mismatch_figure(tables, cases, impls, reg, title, out, stem, unit):
    """One panel per kind of difference; tables[kind][case][impl] = count of `unit`."""
    fig, axes = plt.subplots(len(rio.MISMATCH_KINDS), 1, figsize=(12, 3.4 * len(rio.MISMATCH_KINDS)),
                             squeeze=False)
    names = {"stale_host": "stale-host divergence", "padding_residue": "padding residue", "bug": "bugs"}
    for ax, kind in zip(axes[:, 0], rio.MISMATCH_KINDS):
        table = tables[kind]
        grouped_bars(ax, table, impls, cases, reg, label_fn=lambda c, i, t=table: f"{int(t[c][i])}")
        total = sum(int(v) for row in table.values() for v in row.values())
        ax.set_title(f"{names[kind]} (total {total})", fontsize=10)
        ax.set_ylabel(unit)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        top = max([float(v) for row in table.values() for v in row.values()] + [1.0])
        ax.set_ylim(0, top * 1.3)
        ax.legend(fontsize=8, ncol=min(len(impls), 3), loc="upper left")
    fig.suptitle(title, fontsize=10)
    out.save(fig, stem)


def _tick_label(v, _=None):
    """3 significant digits; thousands as k (4k, 200k), never an exponent."""
    return f"{v / 1000:.3g}k" if v >= 1000 else f"{v:.3g}"


def label_log_axis(ax):
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
