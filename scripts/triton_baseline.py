#!/usr/bin/env python3
"""Triton baseline for `bench`: the two kernels PR #56562 describes (token->request mapping and
SM100 varlen indexer decode metadata), written here from the PR's description, timed with the
same method as dspark-sim (CUDA-graph replay, L2 flushed by a 256 MiB memset outside the timed
region, CUDA events, median of many replays) and beside a one-empty-kernel floor, in one run.

Usage (on the GPU machine): python3 scripts/triton_baseline.py --json OUT.json
Only the GPU machine has torch and triton; this script is not part of CI.
"""
import argparse
import datetime
import json
import os
import statistics

import torch
import triton
import triton.language as tl


@triton.jit
def _find_request(qsl_ptr, tok, num_reqs):
    # Every lane binary-searches the smallest r with qsl[r + 1] > tok; the loop runs until all
    # lanes converge. Masked loads past num_reqs read as +inf so they never win.
    lo = tl.zeros_like(tok)
    hi = tl.zeros_like(tok) + num_reqs
    while tl.sum((lo < hi).to(tl.int32), 0) > 0:
        active = lo < hi
        mid = (lo + hi) // 2
        end = tl.load(qsl_ptr + mid + 1, mask=active & (mid < num_reqs), other=0x7FFFFFFF)
        lo = tl.where(active & (end <= tok), mid + 1, lo)
        hi = tl.where(active & (end > tok), mid, hi)
    return tl.minimum(lo, num_reqs - 1)


@triton.jit
def _map_kernel(qsl_ptr, out_ptr, num_reqs, num_out, BLOCK: tl.constexpr):
    tok = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    num_mapped = tl.load(qsl_ptr + num_reqs)
    req = _find_request(qsl_ptr, tok, num_reqs)
    tl.store(out_ptr + tok, tl.where(tok < num_mapped, req, 0), mask=tok < num_out)


@triton.jit
def _indexer_kernel(qsl_ptr, seq_ptr, bt_ptr, seq_out_ptr, bt_out_ptr, lens_ptr, idx_ptr, per_req_ptr,
                    num_reqs, num_tokens, capacity, bt_stride, out_stride, BLOCK_COLS: tl.constexpr,
                    COLS: tl.constexpr):
    pid = tl.program_id(0)
    if pid < num_tokens:
        actual = tl.load(qsl_ptr + num_reqs)
        valid = pid < actual
        tok = tl.zeros((1,), tl.int32) + pid
        r = tl.sum(_find_request(qsl_ptr, tok, num_reqs), 0)
        start = tl.load(qsl_ptr + r)
        end = tl.load(qsl_ptr + r + 1)
        seq = tl.load(seq_ptr + r)
        causal = seq - (end - start) + (pid - start) + 1
        tl.store(seq_out_ptr + pid, tl.where(valid, causal, 0))
        tl.store(lens_ptr + pid, 1)
        tl.store(idx_ptr + pid, tl.where(valid, r, num_reqs + pid - actual))
        cols = tl.arange(0, BLOCK_COLS)
        row = tl.load(bt_ptr + r * bt_stride + cols, mask=(cols < COLS) & valid, other=0)
        tl.store(bt_out_ptr + pid * out_stride + cols, row, mask=cols < COLS)
    else:
        offs = num_tokens + (pid - num_tokens) * 256 + tl.arange(0, 256)
        tl.store(seq_out_ptr + offs, 0, mask=offs < capacity)
    if pid < num_reqs:
        tl.store(per_req_ptr + pid, tl.load(qsl_ptr + pid + 1) - tl.load(qsl_ptr + pid))


@triton.jit
def _empty_kernel(x_ptr):
    pass


def time_graph(fn, flush, replays, warmup=10):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for i in range(warmup + replays):
        flush.zero_()
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        if i >= warmup:
            samples.append(start.elapsed_time(stop) * 1000.0)
    samples.sort()
    q = lambda f: samples[min(len(samples) - 1, int(f * len(samples)))]
    return {"median_us": statistics.median(samples), "p10_us": q(0.10), "p90_us": q(0.90), "samples": len(samples)}


def case(query_lens, seq_len=8192, cols=128, stride=130, capacity=512):
    dev = "cuda"
    lens = torch.tensor(query_lens, dtype=torch.int32, device=dev)
    qsl = torch.zeros(len(query_lens) + 1, dtype=torch.int32, device=dev)
    qsl[1:] = torch.cumsum(lens, 0)
    n = int(sum(query_lens))
    reqs = len(query_lens)
    seq = lens + seq_len
    bt = torch.randint(1, 1 << 20, (reqs, stride), dtype=torch.int32, device=dev)
    out_map = torch.empty(capacity, dtype=torch.int32, device=dev)
    seq_out = torch.empty(capacity, dtype=torch.int32, device=dev)
    bt_out = torch.empty(capacity, cols, dtype=torch.int32, device=dev)
    lens_out = torch.empty(capacity, dtype=torch.int32, device=dev)
    idx_out = torch.empty(capacity, dtype=torch.int32, device=dev)
    per_req = torch.empty(reqs, dtype=torch.int32, device=dev)
    grid_idx = max(reqs, n + triton.cdiv(capacity - n, 256))

    def run():
        _map_kernel[(triton.cdiv(n, 256),)](qsl, out_map, reqs, n, BLOCK=256, num_warps=4)
        _indexer_kernel[(grid_idx,)](qsl, seq, bt, seq_out, bt_out, lens_out, idx_out, per_req, reqs, n,
                                     capacity, stride, cols, BLOCK_COLS=triton.next_power_of_2(cols),
                                     COLS=cols, num_warps=4)

    # Exactness check against a torch reference before timing.
    run()
    torch.cuda.synchronize()
    expect_req = torch.repeat_interleave(torch.arange(reqs, device=dev, dtype=torch.int32), lens)
    assert torch.equal(out_map[:n], expect_req), "triton mapping mismatch"
    assert torch.equal(bt_out[:n], bt[expect_req.long(), :cols]), "triton bt mismatch"
    assert torch.count_nonzero(seq_out[n:capacity]) == 0
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--replays", type=int, default=300)
    args = ap.parse_args()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    dummy = torch.empty(1, device="cuda")
    cases = {
        "decode_b16_q1": [1] * 16,
        "verify_b16_q6": [6] * 16,
        "adaptive_b16_64tok": [1, 7, 2, 5, 6, 1, 3, 4, 6, 2, 1, 6, 5, 3, 6, 6],
        "verify_b256_q6": [6] * 256,
    }
    results = {"floor": time_graph(lambda: _empty_kernel[(1,)](dummy), flush, args.replays)}
    for name, ql in cases.items():
        results[name] = time_graph(case(ql, capacity=max(512, sum(ql) + 64)), flush, args.replays)
    props = torch.cuda.get_device_properties(0)
    meta = {"device": props.name, "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "date": datetime.datetime.utcnow().isoformat() + "Z",
            "method": "graph replay, 256 MiB memset flush outside the timed region, CUDA events, median",
            "launches": 2}
    print("| case | triton mapping+indexer us (median) | p10 | p90 | floor us |")
    print("|---|---|---|---|---|")
    for name in cases:
        r = results[name]
        print(f"| {name} | {r['median_us']:.2f} | {r['p10_us']:.2f} | {r['p90_us']:.2f} | {results['floor']['median_us']:.2f} |")
    if args.json:
        # Written beside the target and renamed over it: a kill never leaves a cut JSON file.
        tmp = f"{args.json}.tmp.{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=2)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
