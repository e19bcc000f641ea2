#!/usr/bin/env python3
"""What vLLM's own PyTorch ops cost on this GPU, beside dspark-sim's kernels for the same ops.

State (c)'s chains (docs/states.md s.2.1 and s.2.5, written from vLLM's builders: the token
map of CommonAttentionMetadata and the old varlen indexer decode chain, ratio 1) are issued with
PyTorch on a batch-16 decode step, captured in one CUDA graph, and replayed with the L2 flushed
before every replay. Two figures per chain, as `bench` reports its suites:
  events  the replay's wall span (CUDA events, median);
  cupti   the summed GPU durations of the replay's kernels, copies and fills (torch.profiler,
          which reads CUPTI's activity records), median, with the kernel count.
The point is the per-op cost: bench's (c) suite sums about 1.2 µs per op by CUPTI, and the seed's
Before about 2.5 µs per op. This script says which PyTorch's own ops are.

Usage (GPU machine only): python3 scripts/torch_op_costs.py --json OUT.json [--reps 100]
"""
import argparse
import json
import statistics

import torch
from torch.profiler import ProfilerActivity, profile

R, W = 16, 128  # requests (one token each), block-table width


def inputs(dev):
    qsl = torch.arange(R + 1, dtype=torch.int32, device=dev)
    seq = torch.randint(1000, 8000, (R,), dtype=torch.int32, device=dev)
    bt = torch.randint(1, 10**6, (R, W), dtype=torch.int32, device=dev)
    return qsl, seq, bt


def token_map_chain(qsl, buf, num_mapped, n):
    # CommonAttentionMetadata.token_to_req_indices before #56562 (state (c)).
    lens = qsl[1:] - qsl[:-1]
    ar = torch.arange(R, dtype=torch.int32, device=qsl.device)
    m = torch.repeat_interleave(ar, lens, output_size=num_mapped)
    buf[:num_mapped].copy_(m)
    if n > num_mapped:
        buf[num_mapped:n].zero_()


def indexer_chain(qsl, seq, bt, o, A):
    # The old varlen indexer decode chain, ratio 1 (DeepseekV32IndexerMetadataBuilder, state (c)).
    nd = R
    torch.diff(qsl[: nd + 1], out=o["decode_lens"][:nd])
    o["per_req"][:nd].copy_(o["decode_lens"][:nd])
    lens = o["decode_lens"][:nd]
    o["idx"][:A] = torch.repeat_interleave(o["arange"][:nd], lens, output_size=A)
    off = seq[:nd] - lens - qsl[:nd]
    eoff = torch.repeat_interleave(off, lens, output_size=A)
    o["dsl"][:A] = eoff + o["arange"][:A] + 1
    o["dsl"][A:] = 0
    o["ebt"][:A] = torch.repeat_interleave(bt[:nd], lens, dim=0, output_size=A)
    o["decode_lens"][:A] = 1


def measure(fn, dev, reps, flush):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    ev = []
    for _ in range(reps):
        flush.add_(1)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ev.append(a.elapsed_time(b) * 1000.0)
    sums, kernels, per_kernel = [], 0, {}
    for _ in range(min(reps, 50)):
        flush.add_(1)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            g.replay()
            torch.cuda.synchronize()
        evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        kernels = len(evs)
        sums.append(sum(e.device_time for e in evs))  # [µs]
        for i, e in enumerate(evs):
            per_kernel.setdefault(f"{i:02d} {e.name[:70]}", []).append(e.device_time)
    return {"events_us": statistics.median(ev), "cupti_us": statistics.median(sums), "ops": kernels,
            "cupti_us_per_op": statistics.median(sums) / max(kernels, 1),
            "kernels_us_median": {k: statistics.median(v) for k, v in sorted(per_kernel.items())}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--reps", type=int, default=100)
    args = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    flush = torch.empty(64 << 20, dtype=torch.int32, device=dev)  # 256 MiB, written before each replay
    qsl, seq, bt = inputs(dev)
    cap = 8192
    buf = torch.zeros(cap, dtype=torch.int32, device=dev)
    o = {k: torch.zeros(cap, dtype=torch.int32, device=dev) for k in ("decode_lens", "per_req", "idx", "dsl")}
    o["arange"] = torch.arange(cap, dtype=torch.int32, device=dev)
    o["ebt"] = torch.zeros(cap, W, dtype=torch.int32, device=dev)
    empty = torch.zeros(1, dtype=torch.int32, device=dev)
    res = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "floor_one_op": measure(lambda: empty.add_(1), dev, args.reps, flush),
        "token_map_c": measure(lambda: token_map_chain(qsl, buf, R, 32), dev, args.reps, flush),
        "indexer_chain_c_ratio1": measure(lambda: indexer_chain(qsl, seq, bt, o, R), dev, args.reps, flush),
    }
    print(json.dumps(res, indent=1))
    with open(args.json, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
