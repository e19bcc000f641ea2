#!/usr/bin/env python3
"""Reconstructs a bench run's batch-1 TPOT table from its raw files, term by term.

Why the GPU TPOT loop and the CPU model can differ: the script replays the schedules
bench's loop ran (request s of batch1-512 alone, scheduler seed 1 + s, s < --samples; the CPU
`run` reproduces them step for step) on two clocks written out here:

  model    the CPU engine clock (sim/model/engine_clock.h): TimeModel::Work's terms, each eager
           launch's GPU share after its dispatch, a draft joining its target's engine step,
           the batch queue (inflight_steps) and the adaptive stage_confidences sync;
  loop     the GPU TPOT loop with 2 suites (sim/studies/tpot_loop.cu before it used 4
           suites): the metadata on the GPU at the builders' start, the eager launches' gaps on
           the forward stand-in, GpuSuite::Stage's stream sync on step i - 2, and optionally the
           harness's own host time per step and the stand-in's overshoot;
           --loop-now: the loop as it is now (4 suites: step i - 4; gaps behind the metadata).

and prints the table under each added term, the metadata µs from the calibration file or from
the bench run's measured metadata section (graph method, batch 16, L2 cold). The model clock is
checked against `run`'s own TPOT first: the two must agree to 0.1 µs.

  scripts/batch1_tpot_decomposition.py --sim build/dspark-sim \\
      --bench plots/results_h200/bench.json
"""
import argparse
import collections
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

IMPL_HOST = {  # DefaultTimeModelParams' host_us, host_us_per_req (the calibration does not set them)
    'vllm-pre47474': (0.0, 0.0), 'vllm-47474': (60.0, 0.3), 'vllm-pre56562': (30.0, 0.05),
    'vllm-56562': (0.0, 0.0), 'fused-suite': (4.0, 0.0)}
BEFORE, AFTER = 'vllm-pre56562', 'vllm-56562'
MODES = ('none', 'dspark', 'adaptive')
OUTPUT_TOKENS = 128  # batch1-512: 512 in / 128 out


def load_params(cal):
    e, h = cal['engine'], cal['host']
    return dict(dispatch=e['dispatch_us_per_launch'], gap=e['gpu_gap_us_per_launch'], sync=e['sync_us'],
                graph=e['graph_launch_us'], inflight=e['inflight_steps'], compact=e['compact_launches'],
                stage=e['stage_launches'], sched=h['sched_us'], sched_req=h.get('sched_us_per_req', 2.0),
                spec=h['spec_host_us'], ad_host=h.get('adaptive_host_us', 175.0))


def work(row, impl, mode, cal, P, meta=None):
    """TimeModel::Work of one steps.csv row; the forward is the row's gpu_us less its metadata."""
    spec = mode != 'none'
    case, draft = row['case'], row['draft_step'] == '1'
    reqs, tokens, budget = int(row['num_reqs_real']), int(row['num_tokens']), int(row['draft_budget'])
    adaptive = case in ('dspark_adaptive_verify', 'dspark_adaptive_draft') or budget >= 0
    c = cal['metadata'][impl]
    meta_cal = c['gpu_us'][case] + c.get('gpu_us_per_token', 0.0) * max(0, tokens - 96)
    hu, hr = IMPL_HOST[impl]
    joins = spec and draft
    return dict(
        host_pre=(0.0 if joins else P['sched'] + P['sched_req'] * reqs) + (P['spec'] if spec else 0.0) + hu + hr * reqs
        + (P['ad_host'] if adaptive and not draft else 0.0),
        launches=c['launches'][case], meta=meta_cal if meta is None else meta.get((impl, case), meta_cal),
        extra=P['compact'] if adaptive and not draft and budget < int(row['eligible_drafts']) else 0,
        forward=float(row['gpu_us']) - meta_cal, stage_sync=adaptive and draft, joins=joins)


def model_clock(ws, P):
    h = g = last_copy = 0.0
    ends, out = collections.deque(), []

    def dispatch(n, gpu):
        nonlocal h, g
        if n <= 0:
            g = max(g, h) + gpu
            return
        for _ in range(n):
            h += P['dispatch']
            g = max(g, h) + gpu / n + P['gap']
    for w in ws:
        if not w['joins'] and len(ends) >= P['inflight']:
            h = max(h, ends[len(ends) - P['inflight']])
        h += w['host_pre']
        dispatch(w['launches'], w['meta'])
        if w['extra']:
            dispatch(w['extra'], 0.0)
        h += P['graph']
        g = max(g, h) + w['forward']
        if not w['joins']:
            ends.append(g)
            while len(ends) > max(1, P['inflight']):
                ends.popleft()
        if w['stage_sync']:
            h = max(h, last_copy) + P['sync']
            dispatch(P['stage'], 0.0)
            last_copy = g
        out.append(g)
    return out


def loop_clock(ws, P, depth=2, gaps_on_forward=True, host_in=0.0, host_out=0.0, fwd_over=0.0):
    H = G = 0.0
    ends, targets, last_draft = [], collections.deque(), -1
    for i, w in enumerate(ws):
        H += host_out  # Commit, Poll and the next Plan: C++ host time outside the step's spins
        if not w['joins'] and len(targets) >= P['inflight']:
            H = max(H, ends[targets[len(targets) - P['inflight']]])
        if not w['joins']:
            targets.append(i)
            while len(targets) > P['inflight']:
                targets.popleft()
        t_builders = H = H + w['host_pre']
        if i >= depth:  # GpuSuite::Stage synchronizes suite i % depth: step i - depth
            H = max(H, ends[i - depth])
        eager = w['launches'] + w['extra']
        G = max(G, H) + w['meta'] + (0.0 if gaps_on_forward else eager * P['gap'])
        H = max(H, t_builders + eager * P['dispatch'] + P['graph'])
        G = max(G, H) + w['forward'] + (eager * P['gap'] if gaps_on_forward else 0.0) + fwd_over
        ends.append(G)
        if w['stage_sync']:
            if last_draft >= 0:
                H = max(H, ends[last_draft])
            H += P['sync'] + P['stage'] * P['dispatch']
            last_draft = i
        H += host_in
    return ends


def tpot_ms(rows, ends):
    """(last target step's end - prefill's end) / (output - 1), the request's TPOT."""
    first = last = None
    for r, e in zip(rows, ends):
        if r['case'] == 'prefill' and first is None:
            first = e
        elif r['draft_step'] != '1':
            last = e
    return (last - first) / (OUTPUT_TOKENS - 1) / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sim', default='build/dspark-sim')
    ap.add_argument('--bench', required=True, help="a bench run's bench.json (its metadata section and tpot rows)")
    ap.add_argument('--calibration', default='workloads/calibration_h200.json')
    ap.add_argument('--samples', type=int, default=4)
    args = ap.parse_args()
    cal = json.load(open(args.calibration))
    P = load_params(cal)
    bench = json.load(open(args.bench))
    measured = {(m['impl'], m['case']): m['gpu_us_median'] for m in bench['metadata'] if m['method'] == 'graph'}
    loop = {(r['mode'], r['impl']): r.get('loop_tpot_ms', r['tpot_ms']) for r in bench['tpot']}
    tmp = tempfile.mkdtemp(prefix='batch1_decomp_')
    runs = {}
    for mode in MODES:
        for impl in (BEFORE, AFTER):
            for s in range(args.samples):
                out = os.path.join(tmp, f'{mode}-{impl}-{s}')
                cmd = [args.sim, 'run', '--workload', 'batch1-512', '--num-requests', '1', '--seed', str(1 + s),
                       '--mode', mode, '--time-impl', impl, '--no-check', '--calibration', args.calibration,
                       '--out', out]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                rows = list(csv.DictReader(open(os.path.join(out, 'steps.csv'))))
                run_tpot = json.load(open(os.path.join(out, 'summary.json')))['mean_tpot_ms']
                emu = tpot_ms(rows, model_clock([work(r, impl, mode, cal, P) for r in rows], P))
                if abs(emu - run_tpot) > 1e-4:
                    sys.exit(f'model clock {emu:.6f} != run {run_tpot:.6f} ms ({mode}, {impl}, sample {s})')
                runs[(mode, impl, s)] = rows

    def table(label, clock, meta=None, **kw):
        print(f'\n{label}')
        for mode in MODES:
            t = {}
            for impl in (BEFORE, AFTER):
                vals = []
                for s in range(args.samples):
                    rows = runs[(mode, impl, s)]
                    ws = [work(r, impl, mode, cal, P, meta) for r in rows]
                    ends = model_clock(ws, P) if clock == 'model' else loop_clock(ws, P, **kw)
                    vals.append(tpot_ms(rows, ends))
                t[impl] = statistics.median(vals)
            b = (loop.get((mode, BEFORE)), loop.get((mode, AFTER)))
            red = 100 * (1 - t[AFTER] / t[BEFORE])
            line = f'  {mode:9s} {t[BEFORE]:.4f} / {t[AFTER]:.4f} ms  {red:5.2f} %'
            if None not in b:
                line += (f'   bench loop {b[0]:.4f} / {b[1]:.4f} ms {100 * (1 - b[1] / b[0]):5.2f} %'
                         f'  (bench - this: {1e3 * (b[0] - t[BEFORE]):+5.1f} / {1e3 * (b[1] - t[AFTER]):+5.1f} us)')
            print(line)

    table('1. CPU model (model clock, calibration metadata)', 'model')
    table('2. + the bench run\'s measured metadata (batch 16, L2 cold): the composition bench now reports',
          'model', measured)
    table('3. + the 2-suite loop\'s structure (gaps on the stand-in, Stage sync on step i - 2)',
          'loop', measured)
    table('4. + harness host time (10 us in the step, 6 us between steps) and stand-in overshoot (10 us)',
          'loop', measured, host_in=10, host_out=6, fwd_over=10)
    table('the loop as it is now (4 suites, gaps behind the metadata), measured metadata',
          'loop', measured, depth=4, gaps_on_forward=False)


if __name__ == '__main__':
    main()
