#!/usr/bin/env python3
"""Writes a length-only trace shaped like arXiv summarization (Vidur's processed CSV layout).

Vidur's processed CSVs of datasets without arrival times hold only
`num_prefill_tokens,num_decode_tokens`; arXiv summarization's prompts are whole papers (a few
thousand tokens, a tail to the context limit) and its outputs abstracts (a few hundred tokens).
This script draws such a trace with a fixed seed, for the replay-speed check of
docs/performance.md where the dataset itself cannot be downloaded:

  - prompts: log-normal around 5,500 tokens (sigma 0.6), within [200, 15,000];
  - outputs: log-normal around 220 tokens (sigma 0.5), within [20, 1,000].

It is generated data in a real trace's format, not a measurement. Without --request-rate every
request arrives at t=0, as vLLM sends a length-only dataset.

  scripts/gen-arxiv-style-trace.py > /tmp/arxiv_style_lengthonly.csv
"""
import argparse
import math
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out = sys.stdout
    out.write("num_prefill_tokens,num_decode_tokens\n")
    for _ in range(args.requests):
        prompt = int(min(15000, max(200, rng.lognormvariate(math.log(5500), 0.6))))
        output = int(min(1000, max(20, rng.lognormvariate(math.log(220), 0.5))))
        out.write(f"{prompt},{output}\n")


if __name__ == "__main__":
    main()
