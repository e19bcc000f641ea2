#!/usr/bin/env python3
"""Writes a small long-context trace in Mooncake's JSONL shape (workloads/traces/).

Mooncake's published traces hold one object per request: `timestamp` (ms since the first
request), `input_length`, `output_length` and `hash_ids` (one id per 512-token block of the
prompt; requests that share a prefix share its leading ids). This script draws such a trace
with a fixed seed, so that a fresh clone has a long-context example without downloading one:

  - arrivals: a Poisson process at --rate requests/s;
  - prompts: log-normal around 8K tokens with a tail to --max-input (126K by default), as long
    documents and multi-turn histories make them; every fourth request continues an earlier
    conversation and so repeats that request's blocks as its prefix;
  - outputs: log-normal around 300 tokens, at most 2,048.

It is generated data in a real trace's format, not a measurement. `hash_ids` are ignored by
dspark-sim (prefix caching is not modelled) and are kept only for the format's sake.

  scripts/gen-mooncake-style-trace.py > workloads/traces/mooncake_style_long_context.jsonl
"""
import argparse
import json
import math
import random
import sys

BLOCK = 512


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--requests', type=int, default=200)
    ap.add_argument('--rate', type=float, default=0.5, help='mean arrivals per second')
    ap.add_argument('--max-input', type=int, default=126_000)
    ap.add_argument('--seed', type=int, default=20261203)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    t_ms = 0
    next_block = 0
    history = []  # the hash ids of earlier prompts, for conversations that continue
    for i in range(a.requests):
        if i:
            t_ms += max(1, round(rng.expovariate(a.rate) * 1000))
        inp = min(a.max_input, max(256, round(rng.lognormvariate(math.log(8192), 1.0))))
        out = min(2048, max(1, round(rng.lognormvariate(math.log(300), 0.8))))
        prefix = []
        if history and rng.random() < 0.25:
            prefix = list(rng.choice(history))
            inp = min(a.max_input, max(inp, len(prefix) * BLOCK + 64))
        blocks = math.ceil(inp / BLOCK)
        ids = prefix[:blocks]
        while len(ids) < blocks:
            ids.append(next_block)
            next_block += 1
        history.append(ids)
        sys.stdout.write(json.dumps({'timestamp': t_ms, 'input_length': inp, 'output_length': out,
                                     'hash_ids': ids}, separators=(', ', ': ')) + '\n')


if __name__ == '__main__':
    main()
