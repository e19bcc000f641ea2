#!/usr/bin/env python3
"""Replays a step dump (`dspark-sim run --dump-steps DIR`) through a user's callable and checks
every cell it returns against the dump's reference, built from the device view.

    python3 scripts/replay_steps.py DIR --impl path/to/my_kernel.py:build [--device cuda]

The callable gets one `Step` and returns a dict {"<builder>.<field>": array}. It may return any
subset of the fields the dump holds (`--list-fields` prints them); each returned field is compared
over its defined region (the reference's shape; a larger output is cut to it). Field names,
shapes and dtypes are in workloads/STEP_DUMP.md.

Every differing cell is classified (docs/design.md s.6), never folded together:
  stale-host       the step's host view is stale and the cell equals what the HOST view gives
                   (the dump's hostref.* arrays): the callable read host boundaries;
  padding-residue  an indexer bt_out cell of a padding row (rows [A, N_d), columns [1, W)),
                   A = device qsl[num_decodes]: the old chain zeroes only column 0 there;
  bug              anything else.

--device cpu (the default) passes numpy arrays. --device cuda passes torch tensors on the GPU and,
by default, calls the callable eagerly on every step, as vLLM builds attention metadata. With
--graphs it also records CUDA graphs the way vLLM 0.33.0+ records its metadata builds
(AttnMetadataCudaGraphs): only for uniform decode steps whose host view is exact (steps under
adaptive verification and mixed or prefill steps are built eagerly), one graph per key
(real requests, padded requests, real tokens, padded tokens, and the dump's layout sizes), so that
every host value such a build reads is fixed by the key and none is frozen from another step.
The device buffers are rewritten in place before each replay. Each call or replay is timed with
CUDA events.

Exit status: 0 when no cell is a bug, 1 when some are (or --fail-on-stale-host and some are
stale-host), 2 on bad input.
"""
import argparse
import importlib.util
import json
import os
import re
import statistics
import sys

import numpy as np

INPUTS = ("device.query_start_loc", "device.seq_lens", "device.block_table", "device.slot_mapping",
          "host.query_start_loc", "host.seq_lens")
KINDS = ("stale_host", "padding_residue", "bug")


class DumpError(Exception):
    pass


# A step folder as `run --dump-steps` names it: steps/<index>. Nothing read from index.json may
# name a path outside the dump (an absolute path, "..", a symlink).
STEP_DIR = re.compile(r"steps/[0-9]{6,19}")


def step_folder(root, rel, where):
    if not isinstance(rel, str) or not STEP_DIR.fullmatch(rel):
        raise DumpError(f"{where}: dir: expected 'steps/<6+ digits>' (a folder of the dump), got {rel!r}")
    path = os.path.join(root, rel)
    if os.path.islink(os.path.join(root, "steps")) or os.path.islink(path):
        raise DumpError(f"{path}: is a symlink; a step dump holds only the folders it wrote")
    return path


class Step:
    """One dumped step. `device` and `host` hold the inputs by short name (query_start_loc,
    seq_lens, block_table, slot_mapping); `sizes` the batch sizes; `consts` the model constants."""

    def __init__(self, root, entry, consts, where="index.json"):
        self.index = entry["index"]
        self.case = entry["case"]
        self.sizes = dict(entry["sizes"])
        self.fp8_prefill = entry.get("fp8_prefill", True)
        self.causal = entry.get("causal", True)  # false in a DSpark draft step (non-causal SWA rows)
        self.host_view_stale = entry["host_view_stale"]
        self.consts = consts
        self.dir = step_folder(root, entry.get("dir"), where)
        if not os.path.isdir(self.dir):
            raise DumpError(f"{self.dir}: missing step folder (index.json names it)")
        self.device = {n.split(".", 1)[1]: self._load(n) for n in INPUTS if n.startswith("device.")}
        self.host = {n.split(".", 1)[1]: self._load(n) for n in INPUTS if n.startswith("host.")}

    def _load(self, name):
        path = os.path.join(self.dir, name + ".npy")
        if not os.path.isfile(path):
            raise DumpError(f"{path}: missing array")
        return np.load(path, allow_pickle=False)

    def fields(self):
        return sorted(f[4:-4] for f in os.listdir(self.dir) if f.startswith("ref.") and f.endswith(".npy"))

    def reference(self, field):
        return self._load("ref." + field)

    def host_reference(self, field):
        path = os.path.join(self.dir, "hostref." + field + ".npy")
        return np.load(path, allow_pickle=False) if os.path.isfile(path) else None

    def shape_key(self):
        """The padded shape (for a callable's persistent buffers)."""
        s = self.sizes
        return (s["num_reqs"], s["num_tokens"], s["num_decodes"], s["num_decode_tokens"], s["capacity"],
                s["bt_width"], s["bt_stride"], self.fp8_prefill, self.causal)

    def graph_key(self):
        """vLLM's AttnMetadataCudaGraphs key (num_reqs, num_reqs_after_padding, num_tokens,
        num_tokens_after_padding), plus the dump's layout sizes, which a vLLM process fixes once."""
        s = self.sizes
        return (s["num_reqs_real"], s["num_reqs"], s["num_tokens_real"], s["num_tokens"], s["num_decodes"],
                s["num_decode_tokens"], s["capacity"], s["bt_width"], s["bt_stride"], self.fp8_prefill,
                self.causal)

    def graph_recorded(self):
        """Whether vLLM would record this step's metadata build: a uniform decode step (every
        request a decode) whose host split is exact. Under adaptive verification the host query
        lengths are only bounds, so vLLM builds those steps eagerly."""
        s = self.sizes
        return s["num_decodes"] == s["num_reqs"] and "adaptive" not in self.case and not self.host_view_stale


def load_dump(root):
    path = os.path.join(root, "index.json")
    if not os.path.isfile(path):
        raise DumpError(f"{path}: not found (expected the folder `run --dump-steps` wrote)")
    with open(path) as f:
        try:
            index = json.load(f)
        except json.JSONDecodeError as e:
            raise DumpError(f"{path}:{e.lineno}:{e.colno}: {e.msg}")
    meta = index.get("meta", {})
    if meta.get("schema") != "dspark-step-dump" or meta.get("schema_version") != 1:
        raise DumpError(f"{path}: expected meta.schema 'dspark-step-dump' version 1, got "
                        f"{meta.get('schema')!r} version {meta.get('schema_version')!r}")
    return index, [Step(root, e, index["consts"], f"{path}: steps[{i}]") for i, e in enumerate(index["steps"])]


def load_callable(spec):
    if ":" not in spec:
        raise DumpError(f"--impl: expected FILE.py:FUNCTION, got {spec!r}")
    path, name = spec.rsplit(":", 1)
    if not os.path.isfile(path):
        raise DumpError(f"--impl: {path}: no such file")
    module_spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    module_spec.loader.exec_module(module)
    if not hasattr(module, name):
        raise DumpError(f"--impl: {path} has no function {name!r}")
    return getattr(module, name)


def classify(step, field, got, want):
    """Counts of each kind of difference in one field, and the first differing flat index."""
    got = np.asarray(got)
    if got.ndim != want.ndim or any(g < w for g, w in zip(got.shape, want.shape)):
        raise DumpError(f"step {step.index}: {field}: output shape {got.shape} does not cover the defined "
                        f"region {want.shape}")
    got = got[tuple(slice(0, w) for w in want.shape)].astype(want.dtype, copy=False)
    diff = got != want
    counts = dict.fromkeys(KINDS, 0)
    if not diff.any():
        return counts, None
    kind = np.full(want.shape, 2, dtype=np.int8)  # bug
    if field.endswith(".bt_out") and want.ndim == 2:
        s = step.sizes
        actual = int(step.device["query_start_loc"][s["num_decodes"]])
        kind[actual:, 1:] = 1
    host = step.host_reference(field) if step.host_view_stale else None
    if host is not None:
        kind[(kind == 2) & (got == host)] = 0
    for k, name in enumerate(KINDS):
        counts[name] = int(np.count_nonzero(diff & (kind == k)))
    return counts, int(np.flatnonzero(diff)[0])


class CudaReplayer:
    """The callable on the GPU: eager by default; with graphs=True, CUDA graphs recorded and
    replayed for the steps vLLM records (Step.graph_recorded), keyed as vLLM keys them."""

    def __init__(self, fn, graphs=False):
        import torch
        self.torch = torch
        self.fn = fn
        self.use_graphs = graphs
        self.graphs = {}  # graph key -> (graph, device inputs, outputs)
        self.stream = torch.cuda.Stream()
        self.samples_us = []
        self.eager_steps = 0
        self.replayed_steps = 0

    def _device_step(self, step, buffers):
        view = Step.__new__(Step)
        view.__dict__.update(step.__dict__)
        view.device = buffers
        return view

    def _timed(self, fn):
        torch = self.torch
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn()
        stop.record()
        stop.synchronize()
        self.samples_us.append(start.elapsed_time(stop) * 1000.0)
        return out

    def run(self, step):
        torch = self.torch
        if not (self.use_graphs and step.graph_recorded()):
            buffers = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in step.device.items()}
            view = self._device_step(step, buffers)
            torch.cuda.synchronize()
            outputs = self._timed(lambda: self.fn(view))
            self.eager_steps += 1
            return {k: v.cpu().numpy() if hasattr(v, "cpu") else np.asarray(v) for k, v in outputs.items()}
        key = step.graph_key()
        if key not in self.graphs:
            buffers = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in step.device.items()}
            view = self._device_step(step, buffers)
            with torch.cuda.stream(self.stream):
                for _ in range(2):
                    self.fn(view)  # warm-up: compilation and autotuning stay out of the capture
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=self.stream):
                outputs = self.fn(view)
            self.graphs[key] = (graph, buffers, outputs)
        graph, buffers, outputs = self.graphs[key]
        for k, v in step.device.items():
            buffers[k].copy_(torch.from_numpy(np.ascontiguousarray(v)))
        self._timed(graph.replay)
        self.replayed_steps += 1
        return {k: v.cpu().numpy() for k, v in outputs.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", help="the folder `dspark-sim run --dump-steps` wrote")
    ap.add_argument("--impl", help="FILE.py:FUNCTION, called with one Step, returning {field: array}")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--graphs", action="store_true",
                    help="with --device cuda: record CUDA graphs for the steps vLLM records (uniform decode, "
                    "exact host view), keyed by real and padded request and token counts; others run eagerly")
    ap.add_argument("--json", help="also write the counts here")
    ap.add_argument("--list-fields", action="store_true", help="print the dump's reference fields and exit")
    ap.add_argument("--fail-on-stale-host", action="store_true")
    args = ap.parse_args(argv)
    try:
        index, steps = load_dump(args.dump)
        if args.list_fields:
            for f in steps[0].fields() if steps else []:
                print(f, steps[0].reference(f).dtype, steps[0].reference(f).shape)
            return 0
        if not args.impl:
            raise DumpError("--impl FILE.py:FUNCTION is required (or --list-fields)")
        fn = load_callable(args.impl)
        if args.graphs and args.device != "cuda":
            raise DumpError("--graphs needs --device cuda")
        runner = CudaReplayer(fn, graphs=args.graphs) if args.device == "cuda" else None
        totals = {}
        first_bug = None
        # A field a step does not have (the indexer decode fields without a decode request, the
        # segment fields without a prefill, as in vLLM) is skipped there; a name no step has is an error.
        every_field = set().union(*(s.fields() for s in steps)) if steps else set()
        for step in steps:
            outputs = runner.run(step) if runner else fn(step)
            if not isinstance(outputs, dict) or not outputs:
                raise DumpError(f"step {step.index}: the callable must return a non-empty dict {{field: array}}")
            known = set(step.fields())
            for field, got in sorted(outputs.items()):
                if field not in known:
                    if field in every_field:
                        continue
                    raise DumpError(f"step {step.index}: unknown field {field!r}; the dump has {sorted(every_field)}")
                counts, first = classify(step, field, got, step.reference(field))
                t = totals.setdefault(field, {**dict.fromkeys(KINDS, 0), "steps": 0})
                t["steps"] += 1
                for k in KINDS:
                    t[k] += counts[k]
                if counts["bug"] and first_bug is None:
                    first_bug = f"step {step.index} ({step.case}): {field}, first differing flat index {first}"
    except DumpError as e:
        print(f"replay_steps: {e}", file=sys.stderr)
        return 2
    print(f"replayed {len(steps)} of {index['steps_in_run']} steps of {args.dump} through {args.impl} on {args.device}")
    print(f"{'field':36s} {'steps':>6s} {'stale-host':>11s} {'pad-residue':>12s} {'bug':>8s}  (cells)")
    for field, t in sorted(totals.items()):
        print(f"{field:36s} {t['steps']:6d} {t['stale_host']:11d} {t['padding_residue']:12d} {t['bug']:8d}")
    result = {"meta": {"tool": "scripts/replay_steps.py", "argv": sys.argv, "dump": args.dump,
                       "dump_meta": index.get("meta", {}), "device": args.device,
                       "mode": "graphs" if args.graphs else "eager"},
              "steps": len(steps), "fields": totals}
    if runner and runner.samples_us:
        s = sorted(runner.samples_us)
        result["replay_us"] = {"median": statistics.median(s), "p10": s[int(0.1 * (len(s) - 1))],
                               "p90": s[int(0.9 * (len(s) - 1))], "samples": len(s), "graphs": len(runner.graphs),
                               "graph_replays": runner.replayed_steps, "eager_steps": runner.eager_steps}
        print(f"device time per step: median {result['replay_us']['median']:.2f} us over {len(s)} steps "
              f"({runner.eager_steps} eager, {runner.replayed_steps} graph replays of {len(runner.graphs)} graphs "
              f"keyed as vLLM keys them; no L2 flush)")
    if first_bug:
        print(f"first bug: {first_bug}")
    if args.json:
        tmp = f"{args.json}.tmp.{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1)
        os.replace(tmp, args.json)
    bugs = sum(t["bug"] for t in totals.values())
    stale = sum(t["stale_host"] for t in totals.values())
    return 1 if bugs or (args.fail_on_stale_host and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
