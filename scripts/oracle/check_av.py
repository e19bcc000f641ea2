#!/usr/bin/env python3
"""Check the simulator's adaptive verification against a vLLM release's own functions.

Reads the JSON lines that `dspark-sim run --dump-av FILE` writes (sim/observe/av_dump.h): a
header with the run's constants, cost curves and cost tables, then every adaptive verification
step's inputs (rows in batch order: scheduled tokens, drafts, computed tokens, prefill length,
stale host confidences, fresh device confidences) and the simulator's outputs (budget, host
token counts, device draft counts, device qsl, cu_num_logits). On those inputs it runs the
release's adaptive_verification.py, loaded by scripts/oracle/vllm_loader.py:

  build_cost_tables_from_curves(curves, max_num_reqs, max_batch_tokens, cudagraph_limit)
  AdaptiveVerificationManager.get_num_tokens   (the budget, capped by get_max_chunk_logits)
  AdaptiveVerificationManager.compact_batch    (the host split)
  AdaptiveVerificationManager.reallocate_drafts (device allocation, qsl and cu_num_logits), which
      calls 0.34.0's assign_draft_token_budget (its Triton kernel; on a machine without a GPU
      under TRITON_INTERPRET=1, which this script sets) or, in 0.28.0-0.33.0, the uncompiled
      _assign_draft_token_budget (torch.topk) in place of its torch.compile wrapper;

and compares every output exactly. The manager is built without its __init__ (no device
buffers, no streams): the attributes these methods read are set on it, the tensors on the CPU
unless a GPU is present. Without CUDA the release's host-to-device copy helper
(async_tensor_h2d / async_copy_to_gpu, which pins memory) is replaced by a plain copy_.

Ties: 0.34.0 gives tied slots to the lower (request, step), as the simulator does; 0.28.0-0.33.0
take torch.topk's order, which is unspecified. Against those releases an allocation that
differs only in which tied slots it keeps is counted apart (`tie_only`), and the steps whose
boundary had a tie are counted.

Without torch the check is skipped with a message (exit status 0); --require-torch makes that an
error. Exit status 1 when any output differs (tie-only allocation differences excepted).

  python3 scripts/oracle/check_av.py --release 0.34.0 --out report.json RUN1.jsonl [RUN2.jsonl ...]
"""

import argparse
import gzip
import json
import os
import sys
import time
import types

import numpy as np


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dumps", nargs="+", help="JSONL files written by `dspark-sim run --dump-av` (.gz too)")
    ap.add_argument("--release", default="0.34.0", help="vLLM release to load (default 0.34.0)")
    ap.add_argument("--cache-dir", default=None, help="vLLM source cache (default: the loader's, "
                    "DSPARK_VLLM_CACHE)")
    ap.add_argument("--out", default=None, help="write the report JSON here")
    ap.add_argument("--max-steps", type=int, default=0, help="check at most this many steps per file (0: all)")
    ap.add_argument("--label", action="append", default=[], metavar="FILE=TEXT",
                    help="describe a dump file (its base name) in the report, e.g. how it was run")
    ap.add_argument("--require-torch", action="store_true", help="fail instead of skipping without torch")
    return ap.parse_args(argv)


def read_dump(path):
    header, steps = None, []
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"check_av: {path}:{number}: not JSON: {e}")
            kind = record.get("kind")
            if kind == "header":
                header = record
            elif kind == "step":
                steps.append(record)
            else:
                raise SystemExit(f"check_av: {path}:{number}: field 'kind': expected header or step, got {kind!r}")
    if header is None:
        raise SystemExit(f"check_av: {path}: no header line (expected a file from `dspark-sim run --dump-av`)")
    return header, steps


class ReleaseAv:
    """One release's adaptive verification functions, ready to call on recorded steps."""

    def __init__(self, release, cache_dir):
        import torch

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import vllm_loader

        self.torch = torch
        self.release = release
        self.minor = int(release.split(".")[1])
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        loaded = vllm_loader.load(release, cache_dir=cache_dir)
        self.av = loaded.module("vllm.v1.worker.gpu.spec_decode.adaptive_verification")
        self.rs = self._chunk_logits_module(loaded)
        self.replaced = []
        if self.device == "cpu":
            for name in ("async_tensor_h2d", "async_copy_to_gpu"):
                if hasattr(self.av, name):
                    setattr(self.av, name, self._plain_copy)
                    self.replaced.append(name)
        if hasattr(self.av, "_assign_draft_token_budget_compiled"):
            # 0.28.0-0.33.0: the function torch.compile wraps, called as it is.
            self.av._assign_draft_token_budget_compiled = self.av._assign_draft_token_budget
            self.replaced.append("_assign_draft_token_budget_compiled -> _assign_draft_token_budget")

    @staticmethod
    def _chunk_logits_module(loaded):
        """rejection_sampler.py's get_max_chunk_logits. Importing the module pulls in the engine
        (sampling params, msgspec), so when that fails the function and the module-level constants
        it reads are taken from the release's file as they are (ast) and run on their own."""
        name = "vllm.v1.worker.gpu.spec_decode.rejection_sampler"
        try:
            return loaded.module(name)
        except ImportError:
            pass
        import ast

        path = os.path.join(loaded.root, *name.split(".")) + ".py"
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        keep = [node for node in tree.body
                if (isinstance(node, ast.FunctionDef) and node.name == "get_max_chunk_logits")
                or (isinstance(node, (ast.Assign, ast.AnnAssign)) and all(
                    isinstance(t, ast.Name) and t.id.isupper()
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])))]
        module = types.ModuleType(name + " (get_max_chunk_logits only)")
        exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), module.__dict__)
        if not hasattr(module, "get_max_chunk_logits"):
            raise SystemExit(f"check_av: {path}: no get_max_chunk_logits in this release")
        return module

    def _plain_copy(self, data, out=None, **_):
        t = self.torch.from_numpy(np.ascontiguousarray(data)) if isinstance(data, np.ndarray) else data
        return out.copy_(t.to(out.dtype))

    def tables(self, h):
        curve = lambda c: [(int(round(x)), float(y)) for x, y in c]
        return self.av.build_cost_tables_from_curves(curve(h["draft_curve"]), curve(h["verify_curve"]),
                                                     h["max_num_reqs"], h["max_num_batched_tokens"],
                                                     h["cudagraph_limit"])

    def manager(self, h, tables):
        torch = self.torch
        m = object.__new__(self.av.AdaptiveVerificationManager)
        k, max_reqs = h["spec_k"], h["max_num_reqs"]
        m.num_speculative_steps = k
        m.num_bonus_tokens = h["num_bonus_tokens"]
        m._max_total_logits = self.rs.get_max_chunk_logits(h["vocab_size"])
        m.cost_tables = tables
        m._batch_budget = None
        m._stale_idx = 0
        m._copy_admitted_drafts_to_host = False
        dev = self.device
        m._confidence_probs = torch.ones((max_reqs, k), dtype=torch.float32, device=dev)
        m._batch_draft_capacity = torch.empty(max_reqs, dtype=torch.int32, device=dev)
        m._draft_survival = torch.empty(max_reqs * k, dtype=torch.int32, device=dev)
        m.query_start_loc = torch.zeros(max_reqs + 1, dtype=torch.int32, device=dev)
        m._num_non_draft_tokens = torch.empty_like(m.query_start_loc[:-1])
        m._cu_num_logits = torch.empty_like(m.query_start_loc)
        return m

    def run_step(self, m, h, s):
        """The release's outputs for one recorded step."""
        torch = self.torch
        n, k = s["num_reqs"], h["spec_k"]
        ids = [f"r{i}" for i in range(n)]
        sched = np.asarray(s["scheduled_tokens"], dtype=np.int32)
        drafts = np.asarray(s["drafts"], dtype=np.int32)
        stale = np.asarray(s["stale_conf"], dtype=np.float64).astype(np.float32).reshape(n, k)
        fresh = np.asarray(s["fresh_conf"], dtype=np.float64).astype(np.float32).reshape(n, k)
        stale_slot = np.ones((h["max_num_reqs"], k), dtype=np.float32)
        stale_slot[:n] = stale
        computed = np.zeros(h["max_num_reqs"], dtype=np.int32)
        computed[:n] = s["num_computed"]
        prefill = np.zeros(h["max_num_reqs"], dtype=np.int32)
        prefill[:n] = s["prefill_len"]
        m.req_states = types.SimpleNamespace(
            req_id_to_index={rid: i for i, rid in enumerate(ids)},
            num_computed_tokens_np=computed,
            prefill_len=types.SimpleNamespace(np=prefill),
            max_num_reqs=h["max_num_reqs"],
            device=torch.device(self.device),
        )
        m._stale_confidences = [types.SimpleNamespace(np=stale_slot)]
        m._confidence_probs[:n] = torch.from_numpy(fresh).to(self.device)
        num_tokens_per_req = {rid: int(t) for rid, t in zip(ids, sched)}
        draft_tokens = {rid: [0] * int(d) for rid, d in zip(ids, drafts) if d > 0}
        num_tokens = m.get_num_tokens(num_tokens_per_req, draft_tokens)
        budget = m._batch_budget[2]
        cu_np = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(drafts + h["num_bonus_tokens"], out=cu_np[1:])
        host_tokens, _ = m.compact_batch(drafts, sched, cu_np)
        idx_mapping = torch.arange(n, dtype=torch.int64, device=self.device)
        out = m.reallocate_drafts(ids, idx_mapping)
        cu, qsl = out[0], out[1]
        capacities = m._batch_draft_capacity[:n].cpu().numpy().copy()
        return {
            "num_tokens": int(num_tokens),
            "budget": int(budget),
            "host_tokens": [int(x) for x in host_tokens],
            "device_drafts": [int(x) for x in capacities],
            "qsl_device": [int(x) for x in qsl[: s["num_reqs_padded"] + 1].cpu().numpy()],
            "cu_num_logits": [int(x) for x in cu.cpu().numpy()],
        }


def boundary_tie(fresh, drafts, budget, k):
    """Whether the budget's boundary falls inside a group of equal float32 survival scores that
    the budget takes only part of (so which of them are kept is an order choice)."""
    n = len(drafts)
    scores = []
    for r in range(n):
        s = np.float32(1.0)
        for j in range(int(drafts[r])):
            s = np.float32(s * fresh[r * k + j])
            scores.append(s)
    if not 0 < budget < len(scores):
        return False
    scores.sort(reverse=True)
    edge = scores[budget - 1]
    return scores[budget] == edge


def kept_scores(fresh, kept, k):
    out = []
    for r, c in enumerate(kept):
        s = np.float32(1.0)
        for j in range(int(c)):
            s = np.float32(s * fresh[r * k + j])
            out.append(float(s))
    return sorted(out)


def check_file(rav, path, max_steps, labels):
    header, steps = read_dump(path)
    if header.get("adaptive_mode") != "varlen":
        raise SystemExit(f"check_av: {path}: adaptive_mode {header.get('adaptive_mode')!r}: only varlen is "
                         "vLLM's (masked is a what-if no release has)")
    if max_steps > 0:
        steps = steps[:max_steps]
    tables = rav.tables(header)
    ours = (np.asarray(header["draft_ms"], dtype=np.float64), np.asarray(header["verify_ms"], dtype=np.float64))
    table_diffs = {
        "draft_ms": int(np.count_nonzero(tables[0] != ours[0])) if tables[0].shape == ours[0].shape else -1,
        "verify_ms": int(np.count_nonzero(tables[1] != ours[1])) if tables[1].shape == ours[1].shape else -1,
    }
    chunk = int(rav.rs.get_max_chunk_logits(header["vocab_size"]))
    m = rav.manager(header, tables)
    fields = ["budget", "num_tokens", "host_tokens", "device_drafts", "qsl_device", "cu_num_logits"]
    diffs = {f: 0 for f in fields}
    tie_only = {f: 0 for f in ("device_drafts", "qsl_device", "cu_num_logits")}
    examples = []
    ties = binding = capped = 0
    t0 = time.time()
    for s in steps:
        got = rav.run_step(m, header, s)
        want = dict(s)
        want["num_tokens"] = sum(s["scheduled_tokens"]) - sum(s["drafts"]) + s["budget"]
        k = header["spec_k"]
        fresh = np.asarray(s["fresh_conf"], dtype=np.float64).astype(np.float32)
        total = sum(s["drafts"])
        binding += s["budget"] < total
        capped += min(total, max(0, chunk - s["num_reqs"] * header["num_bonus_tokens"])) < total
        tie = bool(boundary_tie(fresh, s["drafts"], got["budget"], k))
        ties += tie
        alloc_same_scores = kept_scores(fresh, got["device_drafts"], k) == kept_scores(fresh, s["device_drafts"], k)
        for f in fields:
            if got[f] == want[f]:
                continue
            if f in tie_only and rav.minor < 34 and tie and alloc_same_scores and got["budget"] == s["budget"]:
                tie_only[f] += 1
                continue
            diffs[f] += 1
            if len(examples) < 5:
                examples.append({"step": s["step"], "field": f, "vllm": got[f], "sim": want[f]})
    return {
        "file": os.path.basename(path),
        "label": labels.get(os.path.basename(path), ""),
        "av_release_of_run": header["av_release"],
        "steps_checked": len(steps),
        "first_step": steps[0]["step"] if steps else None,
        "last_step": steps[-1]["step"] if steps else None,
        "steps_where_budget_binds": binding,
        "steps_capped_by_logits_chunk": capped,
        "max_chunk_logits": chunk,
        "max_chunk_logits_matches": chunk == header["max_total_logits"],
        "cost_table_differences": table_diffs,
        "differences": diffs,
        "tie_only_differences": tie_only if rav.minor < 34 else None,
        "steps_with_boundary_ties": ties,
        "examples": examples,
        "seconds": round(time.time() - t0, 1),
    }


def main(argv):
    args = parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        message = ("check_av: skipped: torch is not installed; vLLM's adaptive verification needs torch "
                   "(and triton for 0.34.0) to run (pip install torch)")
        print(message, file=sys.stderr)
        return 1 if args.require_torch else 0
    os.environ.setdefault("TRITON_INTERPRET", "0" if torch.cuda.is_available() else "1")
    rav = ReleaseAv(args.release, args.cache_dir)
    labels = dict(item.split("=", 1) for item in args.label)
    files = [check_file(rav, p, args.max_steps, labels) for p in args.dumps]
    total = sum(sum(f["differences"].values()) + sum(v for v in f["cost_table_differences"].values() if v > 0)
                + (0 if f["max_chunk_logits_matches"] else 1) for f in files)
    report = {
        "tool": "scripts/oracle/check_av.py",
        "vllm_release": args.release,
        "torch": torch.__version__,
        "device": rav.device,
        "triton_interpret": os.environ.get("TRITON_INTERPRET"),
        "replaced_for_the_cpu": rav.replaced,
        "tie_order": ("ties to the lower (request, step) in both" if rav.minor >= 34 else
                      "vLLM: torch.topk's (unspecified); the simulator: the lower (request, step)"),
        "files": files,
        "total_differences": total,
    }
    text = json.dumps(report, indent=2) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    print(text, end="")
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
