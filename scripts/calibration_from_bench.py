#!/usr/bin/env python3
"""Writes a calibration file whose metadata costs are a bench run's.

`dspark-sim bench` measures every implementation's builder suite per case at batch 16, cold L2,
by the graph method: the measurement the calibration file's metadata.<impl>.gpu_us.<case> and
launches.<case> hold (docs/models.md, "Time model"). Its batch-1 table uses those figures
in place of the calibration's (sim/studies/tpot_loop_model.h); this script puts them into the
calibration file, so that the CPU model and bench's table agree on the same H200 run. Every other
key (the per-token slopes, engine, host, forward, adaptive costs) is kept; meta.metadata_source
records the bench run's meta. The fitted constants were fitted with the old metadata: rerun
scripts/fit_forward.py after this before comparing the serving rows.

  scripts/calibration_from_bench.py --bench plots/results_h200/bench.json \\
      --calibration workloads/calibration_h200.json --out /tmp/calibration_h200.json
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--bench', required=True)
    ap.add_argument('--calibration', default='workloads/calibration_h200.json')
    ap.add_argument('--out', required=True)
    args = ap.parse_args()
    bench = json.load(open(args.bench))
    cal = json.load(open(args.calibration))
    meta = bench['meta']
    if meta.get('batch') != 16 or meta.get('l2_mode') != 'cold':
        sys.exit(f"{args.bench}: metadata measured at batch {meta.get('batch')}, L2 {meta.get('l2_mode')}; "
                 "the calibration's are batch 16, L2 cold")
    changed = []
    for row in bench['metadata']:
        if row['method'] != 'graph':
            continue
        entry = cal['metadata'].setdefault(row['impl'], {})
        old = entry.get('gpu_us', {}).get(row['case'])
        entry.setdefault('gpu_us', {})[row['case']] = row['gpu_us_median']
        entry.setdefault('launches', {})[row['case']] = row['launches']
        changed.append((row['impl'], row['case'], old, row['gpu_us_median']))
    if not changed:
        sys.exit(f'{args.bench}: no graph-method metadata rows')
    cal['meta']['metadata_source'] = {
        'what': 'metadata.<impl>.gpu_us and launches from a dspark-sim bench run (graph method, batch 16, cold L2); '
                'gpu_us_per_token and every other key from the calibration before it',
        'bench_meta': {k: meta.get(k) for k in ('gpu', 'driver', 'date_utc', 'git_sha', 'git_dirty', 'argv')}}
    with open(args.out, 'w') as f:
        json.dump(cal, f, indent=2)
        f.write('\n')
    for impl, case, old, new in changed:
        print(f'{impl:14s} {case:24s} {"-" if old is None else f"{old:8.2f}"} -> {new:8.2f} us')
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()
