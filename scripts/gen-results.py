#!/usr/bin/env python3
"""Writes docs/results.md from the committed result files in plots/results_h200/.

Every figure on the page is read from those files (their provenance, date and commit from
plots/results_h200/provenance.json, which also names the command that made each). The seed's
published figures, which the tool reproduces, are the constants below. Nothing else is typed by
hand, so a new GPU run is published by replacing the files and rerunning this script:

    scripts/gen-results.py            # writes docs/results.md
    scripts/gen-results.py --check    # exits 1 when docs/results.md is not what the files give
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RES = os.path.join(ROOT, 'plots', 'results_h200')
PAGE = os.path.join(ROOT, 'docs', 'results.md')

CASES = ['prefill', 'chunked_prefill', 'mixed', 'decode', 'dspark_verify', 'dspark_adaptive_verify',
         'dspark_draft', 'dspark_adaptive_draft']
# vLLM #56562's published Before -> After speedups (metadata GPU time, CUPTI, batch 16, SM100).
SEED_SPEEDUP = dict(zip(CASES, [1.42, 1.32, 3.04, 4.13, 3.04, 3.33, 3.15, 3.00]))
# Its batch-1 TPOT [ms] (512 in / 128 out), Before / After.
SEED_TPOT = {'none': (6.091, 5.736), 'dspark': (1.657, 1.407), 'adaptive': (1.781, 1.457)}
BEFORE, AFTER, OURS = 'vllm-pre56562', 'vllm-56562', 'fused-suite'
IMPLS = ['vllm-pre47474', 'vllm-47474', 'vllm-pre56562', 'vllm-56562', 'fused-suite']


def load(name):
    with open(os.path.join(RES, name), encoding='utf-8') as f:
        return json.load(f) if name.endswith('.json') else f.read()


def source(prov, name):
    p = prov[name]
    return f"`plots/results_h200/{name}` ({p['date']}, built from {p['commit']})"


def md_table(text, after_heading):
    """The rows (lists of cells) of the first markdown table after the line containing `after_heading`."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if after_heading in l)
    rows = []
    for l in lines[start + 1:]:
        if l.startswith('|'):
            # '||' inside a cell is text (two parallel graph branches), not an empty cell.
            cells = [c.strip().replace('\0', '||') for c in l.replace('||', '\0').strip().strip('|').split('|')]
            if not set(''.join(cells)) <= set('-: '):
                rows.append(cells)
        elif rows:
            break
    return rows


def bench_section(prov, out):
    b = load('bench.json')
    bmd = load('bench.md')
    m = b['meta']
    rows = {(r['impl'], r['case'], r['method']): r for r in b['metadata']}
    cupti_floor = {r[0]: float(r[-1]) for r in md_table(bmd, 'CUPTI method')[1:]}
    out.append('## The seed\'s metadata table: Before (c) → After (d), batch 16, cold L2\n')
    out.append(f"Source: {source(prov, 'bench.json')}, `{prov['bench.json']['command']}`. "
               f"{m['gpu']}, driver {m['driver']}, CUDA {m['cuda_runtime']}, SM clock not locked. "
               f"Method: {m['method']}; the L2 flushed by a {m['flush_bytes'] / 2**20:.0f} MiB memset before each "
               f"sample; samples stop NVBench-style (at least {m['stopping']['min_samples']}, then once the relative "
               f"standard error of the mean is ≤ {m['stopping']['max_noise_pct']} %, at most {m['stopping']['max_time_s']:g} s "
               f"or {m['stopping']['max_samples']} samples a row). "
               'Two figures per cell: **events** (the replay\'s wall span) / **CUPTI** (the summed GPU durations of '
               'its kernels, copies and fills, the seed\'s method). The floor is one empty kernel\'s graph, '
               'measured the same way in the same run.\n')
    out.append('| case | (c) µs | (d) µs | (c) → (d) events | (c) → (d) CUPTI | seed | fused-suite µs | floor µs events / CUPTI |')
    out.append('|---|---:|---:|---:|---:|---:|---:|---:|')
    for c in CASES:
        bf, af, fs = (rows[(i, c, 'graph')] for i in (BEFORE, AFTER, OURS))
        out.append(f"| {c} | {bf['gpu_us_median']:.2f} / {bf['cupti_us_median']:.2f} | "
                   f"{af['gpu_us_median']:.2f} / {af['cupti_us_median']:.2f} | "
                   f"{bf['gpu_us_median'] / af['gpu_us_median']:.2f}x | {bf['cupti_us_median'] / af['cupti_us_median']:.2f}x | "
                   f"{SEED_SPEEDUP[c]:.2f}x | {fs['gpu_us_median']:.2f} / {fs['cupti_us_median']:.2f} | "
                   f"{fs['floor_us']:.2f} / {cupti_floor[c]:.2f} |")
    within = [c for c in CASES if abs((rows[(BEFORE, c, 'graph')]['cupti_us_median'] / rows[(AFTER, c, 'graph')]['cupti_us_median'])
                                      / SEED_SPEEDUP[c] - 1) <= 0.30]
    dec = rows[(OURS, 'decode', 'graph')]
    out.append('')
    out.append(f"- By the seed's method (CUPTI), {len(within)} of {len(CASES)} speedups are within ±30 % of the seed's.")
    out.append(f"- fused-suite at decode: {dec['gpu_us_median']:.2f} µs, {dec['gpu_us_median'] / dec['floor_us']:.2f}x its "
               f"floor of {dec['floor_us']:.2f} µs (target ≤ 1.5x).")
    launches = {i: rows[(i, 'decode', 'graph')]['launches'] for i in IMPLS}
    out.append('- Launches per suite at decode (graph nodes): ' +
               ', '.join(f'{i} {n}' for i, n in launches.items()) + " (the seed: 77 → 17; `docs/states.md` s.2.7).")
    out.append("- (a) and (b) read the host split, so a graph cannot be replayed on a new step: their rows time "
               "a graph captured from the step being timed.\n")

    out.append('## Batch-1 TPOT [ms/token], 512 in / 128 out\n')
    out.append(f"Source: the same `bench.json`. The CPU time model's composition over "
               f"{b['tpot'][0]['composed_samples']:,} single-request schedules with this run's measured metadata "
               "(`sim/studies/tpot_loop_model.h`); the GPU loop (median of its runs: the real scheduler, the "
               "implementation's metadata, a forward stand-in of the modelled duration) beside it as the check.\n")
    t = {(r['mode'], r['impl']): r for r in b['tpot']}
    out.append('| mode | ' + ' | '.join(IMPLS) + ' | (c) → (d) | loop (c) → (d) | seed Before / After | seed |')
    out.append('|---|' + '---:|' * len(IMPLS) + '---:|---:|---:|---:|')
    for mode in ('none', 'dspark', 'adaptive'):
        red = (1 - t[(mode, AFTER)]['tpot_ms'] / t[(mode, BEFORE)]['tpot_ms']) * 100
        loop = (1 - t[(mode, AFTER)]['loop_tpot_ms'] / t[(mode, BEFORE)]['loop_tpot_ms']) * 100
        sb, sa = SEED_TPOT[mode]
        out.append(f"| {mode} | " + ' | '.join(f"{t[(mode, i)]['tpot_ms']:.3f}" for i in IMPLS) +
                   f" | {red:.1f} % | {loop:.1f} % | {sb:.3f} / {sa:.3f} | {(1 - sa / sb) * 100:.1f} % |")
    out.append('')


def pair_section(prov, out):
    text = load('microbench_and_triton.md')
    out.append('## Mapping + indexer against the Triton kernels of #56562 (batch-16 decode)\n')
    out.append(f"Source: {source(prov, 'microbench_and_triton.md')}: `dspark-sim microbench` and "
               "`scripts/triton_baseline.py` in one lease, the same method as above (graph replay, 256 MiB flush, "
               "events), each beside its own empty-kernel floor.\n")
    floor = re.search(r'## decode.*\nfloor \(one empty kernel\): graph ([0-9.]+)', text).group(1)
    rows = [r for r in md_table(text, '## decode') if r[0] in ('mapping+indexer', 'ladder')]
    triton = next(r for r in md_table(text, '## scripts/triton_baseline.py') if r[0] == 'decode_b16_q1')
    tri = float(triton[1])
    out.append('| what | µs | x floor | x Triton pair | launches |')
    out.append('|---|---:|---:|---:|---:|')
    out.append(f"| Triton mapping + indexer, serial graph | {tri:.2f} | {tri / float(triton[4]):.2f} | 1 | 2 |")
    for r in rows:
        if r[2] != 'graph':
            continue
        us = float(r[3])
        name = ('probe: ' if r[0] == 'ladder' else 'CUDA pair: ') + r[1].replace('||', ' ∥ ')
        out.append(f"| {name} | {us:.2f} | {us / float(floor):.2f} | {us / tri:.2f} | {r[6]} |")
    out.append('')
    out.append(f"Floors: {floor} µs (microbench), {triton[4]} µs (the Triton run). The probes of the latency ladder "
               "(`sim/cli/microbench_ladder.cuh`) run nothing but a chain of dependent loads: what any kernel with "
               "that chain costs at least. Target: our serial pair ≤ 0.75x the Triton pair.\n")


def executor_rates(name):
    """The steps/s of every run in a console file, in order."""
    return [int(m) for m in re.findall(r'simulator: \d+ steps in [0-9.]+ s wall = (\d+) steps/s', load(name))]


def executor_table(s, out):
    """Per implementation of one executor summary; then the bound the timing puts on the rate: each
    suite is timed from an idle stream, one after the other, so a step takes at least the sum of
    their GPU times (the mean, as the rate is a mean)."""
    out.append('| implementation | GPU µs per step, median (p10-p90) | launches per step | eager runs | stale-host cells | padding-residue cells | bugs |')
    out.append('|---|---:|---:|---:|---:|---:|---:|')
    for i, r in s['impls'].items():
        g = r['gpu_us']
        out.append(f"| {i} | {g['median']:.2f} ({g['p10']:.2f}-{g['p90']:.2f}) | {r['launches_per_step']:.1f} | "
                   f"{r['eager_runs']:,} of {s['steps']:,} | {r['stale_host']:,} | {r['padding_residue']:,} | {r['bug']} |")
    total = sum(r['gpu_us']['mean'] for r in s['impls'].values())
    out.append('')
    out.append(f"The suites' GPU time per step, summed (means): {total:.0f} µs, so at most {1e6 / total:,.0f} steps/s "
               "with nothing else on the step.\n")


def executor_section(prov, out):
    s = load('gpu_executor_all_cold_summary.json')['gpu_executor']
    v4 = load('gpu_executor_v4_summary.json')['gpu_executor']
    rates = {n: executor_rates(n) for n in ('gpu_executor_all_cold.txt', 'gpu_executor_v4.txt',
                                            'gpu_executor_d_cold.txt', 'gpu_executor_d_warm.txt')}
    med = lambda v: sorted(v)[len(v) // 2]
    runs = lambda v: ' / '.join(f'{x:,}' for x in v)
    out.append('## The GPU executor: a real trace replayed and checked on the device\n')
    out.append(f"Sources: {source(prov, 'gpu_executor_all_cold_summary.json')}, "
               f"`{prov['gpu_executor_all_cold_summary.json']['command']}`, and "
               f"{source(prov, 'gpu_executor_v4_summary.json')}, `{prov['gpu_executor_v4_summary.json']['command']}`: "
               f"64 requests of the Azure conversation trace under adaptive verification, every state run as vLLM runs "
               f"it (its graphs where it is captured, eagerly otherwise) on every step and checked on the device "
               f"against the reference; L2 flushed ({s['flush_bytes'] / 2**20:.0f} MiB) before each suite. Three "
               "runs of each in one lease, the median taken.\n")
    out.append('| run | steps/s, median | the runs |')
    out.append('|---|---:|---|')
    out.append(f"| DeepSeek-V4, its states as released ((a)-(c)), cold L2 | {med(rates['gpu_executor_v4.txt']):,} | "
               f"{runs(rates['gpu_executor_v4.txt'])} |")
    out.append(f"| DeepSeek-V4.1, every implementation, cold L2 | {med(rates['gpu_executor_all_cold.txt']):,} | "
               f"{runs(rates['gpu_executor_all_cold.txt'])} |")
    out.append(f"| DeepSeek-V4.1, vllm-56562 and fused-suite, cold L2 | {rates['gpu_executor_d_cold.txt'][0]:,} | |")
    out.append(f"| DeepSeek-V4.1, vllm-56562 and fused-suite, warm L2 | {rates['gpu_executor_d_warm.txt'][0]:,} | |")
    out.append('')
    out.append(f"DeepSeek-V4 ({v4['steps']:,} steps):\n")
    executor_table(v4, out)
    out.append(f"DeepSeek-V4.1 ({s['steps']:,} steps; `vllm-pre47474` and `vllm-47474` are the seed's (a) and (b) "
               "on V4.1, a pairing no release had):\n")
    executor_table(s, out)


def render():
    prov = load('provenance.json')
    out = ['# Results on an H200',
           '',
           'Generated by `scripts/gen-results.py` from the files in `plots/results_h200/` (their dates, commits '
           'and commands in `provenance.json`); do not edit by hand. The states are SM100 code paths measured on '
           'an SM90 GPU (`docs/states.md`). Ratios are taken within one run, each figure beside the floor of the '
           'same run (`docs/design.md` s.5).',
           '']
    bench_section(prov, out)
    pair_section(prov, out)
    executor_section(prov, out)
    return '\n'.join(out).rstrip('\n') + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--check', action='store_true')
    a = ap.parse_args()
    page = render()
    if a.check:
        cur = open(PAGE, encoding='utf-8').read() if os.path.exists(PAGE) else ''
        if cur != page:
            print('gen-results: docs/results.md is not current; run scripts/gen-results.py', file=sys.stderr)
            return 1
        print('gen-results: docs/results.md is current')
        return 0
    with open(PAGE + '.tmp', 'w', encoding='utf-8') as f:
        f.write(page)
    os.replace(PAGE + '.tmp', PAGE)
    print('gen-results: wrote docs/results.md')
    return 0


if __name__ == '__main__':
    sys.exit(main())
