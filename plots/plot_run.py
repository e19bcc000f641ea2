"""The plots of one run folder (summary.json, steps.csv, requests.csv): batch size and tokens per
step over time, the acceptance-length distribution, and the metadata check's differences."""

import math
import os

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

import results_io as rio
from plot_common import CASE_COLORS, mismatch_figure


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


def plot_run_mismatches(run_dir, reg, out):
    try:
        counts = rio.metadata_check_by_case(rio.read_summary(run_dir), os.path.join(run_dir, "summary.json"))
    except rio.InputError as e:
        return out.skip("stale_host_divergence_run", str(e))
    counts = {reg.canonical(i): v for i, v in counts.items()}
    impls = reg.ordered(counts.keys())
    cases = rio.ordered({c for per in counts.values() for c in per}, rio.CASES)
    tables = {k: {c: {i: counts[i][c][k] for i in impls if c in counts[i]} for c in cases}
              for k in rio.MISMATCH_KINDS}
    mismatch_figure(tables, cases, impls, reg,
                     f"Metadata differences per implementation and step case (metadata check): {_run_title(run_dir)}",
                     out, "stale_host_divergence_run", "steps with a difference")
