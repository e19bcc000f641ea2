#!/usr/bin/env python3
"""Measure the engine-cost constants of the time model on the GPU machine, with PyTorch.

Writes the `engine` section of a calibration file (docs/models.md, "Time model";
sim/model/engine_clock.h says how each constant is charged):

  dispatch_us_per_launch  host time of one eager launch: a Python loop of the ops of vLLM's
                          state (c) token-to-request chain (diff, arange, repeat_interleave with
                          output_size, copy_, zero_) on small CUDA tensors, issued while the GPU
                          is busy (no stall), divided by the kernels + copies the profiler counts
  gpu_gap_us_per_launch   GPU time the same ops take when queued eagerly, minus their time as
                          one captured CUDA graph, per launch
  sync_us                 host time of an event.synchronize() on an idle GPU
  graph_launch_us         host time of one graph replay

Run on the H200 (torch installed there):
  python3 scripts/measure_engine_costs.py --out engine_costs.json
then copy its "engine" object into workloads/calibration_h200.json (keep "method").
"""
import argparse
import datetime
import json
import statistics
import time

import torch


def chain(qsl, out, total):
    # vLLM (c): lengths from the device boundaries, the host total as output_size.
    lens = torch.diff(qsl)
    idx = torch.arange(lens.numel(), device=qsl.device, dtype=torch.int32)
    mapping = torch.repeat_interleave(idx, lens, output_size=total)
    out[:total].copy_(mapping)
    out[total:].zero_()


def busy(us):
    # Queue GPU work long enough that the host's dispatch never waits for the device.
    torch.cuda._sleep(int(us * 1.98e3))  # ~1.98 GHz SM clock on the H200


def median(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="engine_costs.json")
    ap.add_argument("--reqs", type=int, default=16)
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    dev = torch.device("cuda")
    lens = torch.full((args.reqs,), 6, dtype=torch.int32)
    qsl = torch.zeros(args.reqs + 1, dtype=torch.int32)
    qsl[1:] = torch.cumsum(lens, 0)
    qsl = qsl.to(dev)
    total = int(lens.sum())
    out = torch.empty(512, dtype=torch.int32, device=dev)
    for _ in range(20):
        chain(qsl, out, total)
    torch.cuda.synchronize()

    # Kernels + copies per chain, from the profiler.
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        chain(qsl, out, total)
        torch.cuda.synchronize()
    launches = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    launches = max(launches, 1)

    # Host dispatch per launch, with the GPU busy.
    host = []
    for _ in range(args.reps):
        busy(2000)
        t0 = time.perf_counter()
        chain(qsl, out, total)
        host.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    dispatch_us = median(host) / launches

    # GPU time eager (queued behind a sleep, so no host gaps) vs the same ops as a graph.
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    eager = []
    for _ in range(args.reps):
        busy(2000)
        e0.record()
        chain(qsl, out, total)
        e1.record()
        torch.cuda.synchronize()
        eager.append(e0.elapsed_time(e1) * 1e3)
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        chain(qsl, out, total)
        with torch.cuda.graph(graph):
            chain(qsl, out, total)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graphed, replay_host = [], []
    for _ in range(args.reps):
        busy(2000)
        e0.record()
        t0 = time.perf_counter()
        graph.replay()
        replay_host.append((time.perf_counter() - t0) * 1e6)
        e1.record()
        torch.cuda.synchronize()
        graphed.append(e0.elapsed_time(e1) * 1e3)
    gap_us = max(0.0, (median(eager) - median(graphed)) / launches)

    # A sync once the GPU is idle.
    ev = torch.cuda.Event(blocking=True)
    syncs = []
    for _ in range(args.reps):
        ev.record()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        ev.synchronize()
        syncs.append((time.perf_counter() - t0) * 1e6)

    props = torch.cuda.get_device_properties(0)
    result = {
        "engine": {
            "method": (
                f"scripts/measure_engine_costs.py on {props.name}, torch {torch.__version__}, "
                f"CUDA {torch.version.cuda}, {datetime.datetime.utcnow().isoformat()}Z: "
                f"vLLM (c)'s token-to-request chain at {args.reqs} requests ({launches} launches), "
                f"medians of {args.reps}; dispatch = host time of the chain issued behind a GPU "
                f"sleep / launches; gap = (eager GPU time - graph replay GPU time) / launches; "
                f"sync = event.synchronize() on an idle GPU; graph launch = host time of replay()"
            ),
            "dispatch_us_per_launch": round(dispatch_us, 3),
            "gpu_gap_us_per_launch": round(gap_us, 3),
            "sync_us": round(median(syncs), 3),
            "graph_launch_us": round(median(replay_host), 3),
        },
        "raw": {
            "launches_per_chain": launches,
            "chain_host_us": median(host),
            "chain_eager_gpu_us": median(eager),
            "chain_graph_gpu_us": median(graphed),
        },
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
