#!/usr/bin/env python3
"""The vLLM oracle: runs a released vLLM's own metadata builders on our steps and compares
every output with what our implementation of that state wrote.

    python3 scripts/oracle/vllm_oracle.py --release 0.34.0 \
        --steps seed-results/*.json --dump DUMP_DIR --sim build/dspark-sim \
        --impl vllm-0.34 --out report.json

Inputs (any mix):
- ``--steps FILE.json``: a `dspark-sim step --out` report (workloads/STEP.md); the step is its
  "step" object and our outputs are ``impls[--impl].outputs``.
- ``--dump DIR``: a `dspark-sim run --dump-steps` folder (workloads/STEP_DUMP.md). With ``--sim``
  each dumped step is passed through `dspark-sim step --impl IMPL` and compared with that
  implementation's own outputs; without it, with the dump's `ref.*` fields (the reference the
  run's own check holds every implementation to).

For each step the oracle builds a CommonAttentionMetadata as vLLM's GPU runner does (device and
host query_start_loc, seq_lens, the block table, slot_mapping, positions, the padded
num_actual_tokens, max_query_len from the host split) and calls the release's own builders,
constructed by ``object.__new__`` with the attributes their ``build`` reads:
DeepseekSparseSWAMetadataBuilder (V4.1: DeepseekV41SparseSWAMetadataBuilder's base),
DeepseekV4SparseMLAMetadataBuilder ratio 2, CompressorMetadataBuilder (the ring) and
DeepseekV32IndexerMetadataBuilder ratios 1 and 2 with ``supports_varlen`` (the SM100 path).
The token map is the CommonAttentionMetadata's own, shared by every builder of the step.

Every differing cell is classified with the project's three kinds (stale-host, padding residue,
bug) or, when the difference is one we keep on purpose, by that difference's name (KEPT below).

On a GPU (``--device cuda``) every builder call is profiled with torch.profiler and its kernel
launches and copies counted per suite; on the CPU (Triton's interpreter, TRITON_INTERPRET=1)
launch counts are reported as n/a. Without torch the oracle prints why and exits 0 (skipped).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

SCHEMA = "dspark-vllm-oracle"
SCHEMA_VERSION = 1

# Differences we keep on purpose, by name: (builder.field, why). A differing cell that one of
# these explains is counted under its name, not as a bug.
KEPT = {
    "c128a-full-width": (
        "mla_c128.c128a_*_indices",
        "vLLM 0.24.0/0.25.0 run _build_c128a_topk_metadata_kernel over the buffer's whole width "
        "(c128a_max_compressed); ours, like 0.26.0 on, over the active width of the longest "
        "sequence. The columns past it are checked to be -1 (otherwise the shapes differ, a bug) "
        "and compared over the active width."),
    "ring-tail-unwritten": (
        "mla_r2.ring_slots",
        "CompressorMetadataBuilder writes slot_mapping_buffer[:num_tokens] only; entries past N "
        "are torch.empty memory in vLLM. Ours are -1 (a defined region). Compared over [0, N)."),
    "token-to-seq-rows-kept": (
        "indexer_r*.prefill_token_to_seq",
        "vLLM allocates each prefill chunk's token_to_seq with torch.empty at its full size; ours "
        "keeps the first 4 x capacity rows of the chunks in plan order (a persistent buffer). "
        "Compared over our rows."),
    "ring-padding-rows": (
        "mla_r2.ring_slots",
        "_ring_slot_mapping_kernel treats every token below num_actual_tokens (the padded N) as "
        "valid: a graph-padding token gets request 0's ring slot at positions[t] % CAP, and "
        "positions[t] of a padding row is whatever the runner's persistent buffer held (0 here). "
        "Ours give padding rows -1 (kernels/ring_slots.cuh). Counted as padding-residue."),
    "swa-rows-uncleared": (
        "swa.swa_indices, swa.swa_indices_noncausal",
        "Up to 0.27.1 _compute_swa_indices_and_lens_kernel (and the DSpark non-causal kernel) gives a "
        "token without a KV slot (slot_mapping -1, graph padding included) length 0 and leaves its row "
        "as the buffer held it; 0.28.0 clears it "
        "to -1, as ours (the suite's one reference) does. Rows of length 0 in such a release are "
        "counted as padding-residue."),
    "swa-no-dspark": (
        "swa.*",
        "DSpark arrives in 0.25.0: vLLM 0.24.0's SWA builder has no non-causal path for a draft step, so a "
        "draft step with vllm-0.24 is a what-if (a pairing no release had) and its SWA fields are not "
        "compared there (the report's notes say so)."),
    "deepgemm-schedule": (
        "indexer_r*.schedule_metadata",
        "get_paged_mqa_logits_metadata is DeepGEMM's compiled kernel, not importable without "
        "DeepGEMM; the release's launch count gets its 2 launches (kernel + copy) per decode "
        "indexer added, its output is not compared."),
}

# Our fields with no release output to compare with, and why.
NOT_COMPARED = {
    "indexer_r2.compressed_seq_lens": "vLLM's compressed_seq_lens is a transient seq_lens // ratio "
    "that only the prefill chunks read (from 0.31.0 computed only when num_prefills > 0); no builder "
    "output holds it. The prefill chunks built from it are compared.",
    "prefill_segments.*": "#57207's FP8 prefill segmentation is in no release up to 0.34.0 (our released states build it only under --what-if-57207).",
}


# ----------------------------------------------------------------------------- steps


@dataclass
class Step:
    name: str
    sizes: dict
    consts: dict
    causal: bool
    host_view_stale: bool
    device: dict  # query_start_loc, seq_lens, block_table [R, stride], slot_mapping (int64)
    host: dict  # query_start_loc, seq_lens
    ours: dict = field(default_factory=dict)  # "builder.field" -> np.ndarray (our impl's)
    hostref: dict = field(default_factory=dict)  # "builder.field" -> from the host view
    ours_source: str = ""
    adaptive_run: bool = False  # built by a process with adaptive verification on
    profile: bool = True  # count this step's launches (on a GPU)
    ours_launches: Optional[int] = None  # what our implementation issued on this step (its report)
    ours_graph_launches: int = 0  # of them, graph launches (vllm-0.34's recorded builds)


# The builders of one V4.1 layer group, in the order it runs them (the token map is the first
# builder's: SWA's, or the CommonAttentionMetadata's own method when SWA is not run).
BUILDERS = ("token_map", "swa", "mla_r2", "ring", "indexer_r1", "indexer_r2")

DEFAULT_CONSTS = {"swa_window": 128, "swa_block_size": 64, "mla_block_size": 64, "spec_k": 5,
                  "prefill_segment": 1024}


def ring_capacity(k: int) -> int:
    c = 1
    while c < k + 2:
        c *= 2
    return max(8, c)


def _arr(values, dtype=np.int32):
    return np.asarray(values, dtype=dtype)


def _field_array(f: dict) -> np.ndarray:
    dtype = np.int64 if f.get("dtype") == "int64" else np.int32
    return np.asarray(f["values"], dtype=dtype).reshape(f["shape"])


def step_from_result(result: dict, impl: str, name: str) -> Step:
    """A `dspark-sim step --out` report: its "step" object and impls[impl].outputs."""
    s = result["step"]
    R = len(s["seq_lens"])
    stride = int(s["bt_stride"])
    bt = np.zeros((R, stride), np.int32)
    for r, row in enumerate(s["block_table"]):
        bt[r, :len(row)] = row
    consts = dict(DEFAULT_CONSTS)
    consts["spec_k"] = int(s.get("spec_k", 5))
    consts["compressor_ring_capacity"] = ring_capacity(consts["spec_k"])
    consts["model"] = str(s.get("model", "v4.1"))
    host = s.get("host", {})
    sizes = {k: int(s[k]) for k in ("num_tokens", "num_decodes", "num_decode_tokens", "capacity",
                                    "bt_width", "bt_stride")}
    sizes["num_reqs"] = R
    impls = result.get("impls", {})
    if impl not in impls and len(impls) == 1:  # an alias (vllm-56562) of the report's one implementation
        impl = next(iter(impls))
    if impl not in impls or "outputs" not in impls[impl]:
        raise ValueError(f"{name}: the report holds no outputs of implementation '{impl}' "
                         f"(it has {sorted(impls)}); rerun `dspark-sim step --impl {impl} --out`")
    ours = {k: _field_array(v) for k, v in impls[impl]["outputs"].items()}
    launches = impls[impl].get("launches")
    return Step(
        name=name, sizes=sizes, consts=consts, causal=bool(s.get("causal", True)),
        host_view_stale=bool(result.get("host_view_stale", False)),
        device={"query_start_loc": _arr(s["query_start_loc"]), "seq_lens": _arr(s["seq_lens"]),
                "block_table": bt, "slot_mapping": _arr(s["slot_mapping"], np.int64)},
        host={"query_start_loc": _arr(host.get("query_start_loc", s["query_start_loc"])),
              "seq_lens": _arr(host.get("seq_lens", s["seq_lens"]))},
        ours=ours, ours_source=f"dspark-sim step, impl {impl}",
        ours_launches=int(launches) if launches is not None else None,
        ours_graph_launches=int(impls[impl].get("graph_launches", 0) or 0),
        adaptive_run="adaptive" in str(s.get("name", "")))


def load_dump(path: str, limit: int | None, stride: int = 1):
    with open(os.path.join(path, "index.json")) as f:
        index = json.load(f)
    if index.get("meta", {}).get("schema") != "dspark-step-dump":
        raise ValueError(f"{path}/index.json: schema is not dspark-step-dump")
    consts = dict(DEFAULT_CONSTS)
    consts.update(index.get("consts", {}))
    steps = index["steps"][::max(stride, 1)]
    steps = steps[:limit] if limit else steps
    argv = [str(a) for a in index.get("meta", {}).get("argv", [])]
    mode = "adaptive"  # `run --mode` defaults to adaptive verification
    for i, a in enumerate(argv):
        if a == "--mode" and i + 1 < len(argv):
            mode = argv[i + 1]
        elif a.startswith("--mode="):
            mode = a.split("=", 1)[1]
    adaptive_run = mode == "adaptive"
    for e in steps:
        d = os.path.join(path, e["dir"])
        arrays = {fn[:-4]: np.load(os.path.join(d, fn)) for fn in os.listdir(d) if fn.endswith(".npy")}
        z = dict(e["sizes"])
        yield Step(
            name=f"{os.path.basename(os.path.normpath(path))}/{e['index']}", sizes=z, consts=consts,
            causal=bool(e.get("causal", True)), host_view_stale=bool(e.get("host_view_stale", False)),
            device={k: arrays["device." + k] for k in ("query_start_loc", "seq_lens", "block_table",
                                                        "slot_mapping")},
            host={k: arrays["host." + k] for k in ("query_start_loc", "seq_lens")},
            ours={k[4:]: v for k, v in arrays.items() if k.startswith("ref.")},
            hostref={k[8:]: v for k, v in arrays.items() if k.startswith("hostref.")},
            ours_source="dump ref.* (the reference the run's check holds implementations to)",
            adaptive_run=adaptive_run), e, index


def step_json(step: Step, entry: dict) -> dict:
    """The dumped step as a STEP.json object (workloads/STEP.md) for `dspark-sim step`."""
    z = step.sizes
    R = z["num_reqs"]
    W = z["bt_width"]
    return {
        "name": step.name,
        "query_start_loc": step.device["query_start_loc"].tolist(),
        "seq_lens": step.device["seq_lens"].tolist(),
        "block_table": step.device["block_table"][:R, :W].tolist(),
        "num_decodes": z["num_decodes"], "num_tokens": z["num_tokens"],
        "num_decode_tokens": z["num_decode_tokens"], "capacity": z["capacity"],
        "bt_width": W, "bt_stride": z["bt_stride"],
        "slot_mapping": step.device["slot_mapping"].tolist(),
        "host": {"query_start_loc": step.host["query_start_loc"].tolist(),
                 "seq_lens": step.host["seq_lens"].tolist()},
        "fp8_prefill": bool(entry.get("fp8_prefill", True)),
        "spec_k": int(step.consts.get("spec_k", 5)),
        **({"model": "v4"} if step.consts.get("model") == "v4" else {}),
        **({} if step.causal else {"causal": False}),  # a DSpark draft step
    }


def ours_from_sim(sim: str, impl: str, step: Step, entry: dict) -> None:
    with tempfile.TemporaryDirectory(prefix="dspark-oracle-") as tmp:
        src = os.path.join(tmp, "step.json")
        out = os.path.join(tmp, "result.json")
        with open(src, "w") as f:
            json.dump(step_json(step, entry), f, indent=1)  # dspark-sim reads lines of at most 64 KiB
        p = subprocess.run([sim, "step", "--json", src, "--impl", impl, "--out", out],
                           capture_output=True, text=True)
        if p.returncode not in (0, 1) or not os.path.exists(out):
            raise RuntimeError(f"{step.name}: dspark-sim step failed ({p.returncode}): {p.stderr.strip()[:400]}")
        with open(out) as f:
            result = json.load(f)
    fresh = step_from_result(result, impl, step.name)
    step.ours = fresh.ours
    step.ours_launches, step.ours_graph_launches = fresh.ours_launches, fresh.ours_graph_launches
    step.hostref = {k: v for k, v in step.hostref.items()}
    step.ours_source = f"dspark-sim step, impl {impl}"


# ----------------------------------------------------------------------------- the release


class _Cfg:
    """Attribute bag for the config objects a build() reads."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def prefill_chunk_outputs(prefill, pre: str, out: dict) -> None:
    """An indexer's prefill chunks as our fields: each chunk's cu_seq_lens, ks, ke and
    token_to_seq, concatenated in chunk order."""
    cus, ks, ke, tts = [], [], [], []
    for ch in prefill.chunks:
        cus.append(ch.cu_seq_lens.cpu().numpy())
        ks.append(ch.cu_seqlen_ks.cpu().numpy())
        ke.append(ch.cu_seqlen_ke.cpu().numpy())
        tts.append(ch.token_to_seq.cpu().numpy())
    cat = lambda xs: np.concatenate(xs).astype(np.int32) if xs else np.zeros(0, np.int32)
    out[pre + "prefill_cu_seq_lens"] = cat(cus)
    out[pre + "prefill_ks"] = cat(ks)
    out[pre + "prefill_ke"] = cat(ke)
    out[pre + "prefill_token_to_seq"] = cat(tts)


def launch_counting(profile, launches: dict):
    """call(name, fn): fn(), and with a profiler its launch count recorded in launches[name]."""
    def call(name, fn):
        if profile is None:
            return fn()
        res, n = profile(fn)
        launches[name] = n
        return res
    return call


class ReleaseSuite:
    """The release's builders for one model layout, constructed as vLLM's runner would."""

    def __init__(self, rel, device: str, capacity: int, max_reqs: int, max_width: int, consts: dict,
                 force_sm100: bool = True, builders=BUILDERS):
        self._setup(rel, device, capacity, max_reqs, max_width, consts)
        self.builders = tuple(b for b in BUILDERS if b in builders)
        self.has_v41 = rel.has("vllm.models.deepseek_v41.sparse_mla")
        v41 = [b for b in ("swa", "mla_r2", "ring") if b in self.builders]
        if v41 and not self.has_v41:
            raise RuntimeError(f"vLLM {rel.version} has no DeepSeek-V4.1 (models/deepseek_v41), so no "
                               f"V4.1 builder ({', '.join(v41)}); its token map and indexer builders can "
                               "still run (--builders token_map,indexer_r1,indexer_r2)")
        self.idx_mod = rel.module("vllm.v1.attention.backends.mla.indexer")
        # Before 0.30.0 the indexer expands the block table with repeat_interleave into a buffer
        # exactly as wide as the runner's block table; our steps vary that width, so such a
        # release gets a buffer of the step's width (run()).
        import inspect
        self.old_indexer_chain = "_indexer_decode_metadata_kernel" not in inspect.getsource(self.idx_mod)
        if force_sm100:
            self._force_sm100()
        self.swa = self.mla_r2 = self.ring = None
        if v41:
            self.swa_mod = rel.module("vllm.v1.attention.backends.mla.sparse_swa")
            self.mla_mod = rel.module("vllm.models.deepseek_v41.sparse_mla")
            self.cmp_mod = rel.module("vllm.models.deepseek_v41.compressor")
            self.swa = self._make_swa() if "swa" in self.builders else None
            self.mla_r2 = self._make_mla(2) if "mla_r2" in self.builders else None
            self.ring = self._make_ring() if "ring" in self.builders else None
        self.indexer = [self._make_indexer(k) if f"indexer_r{k}" in self.builders else None for k in (1, 2)]
        # Without the SWA builder (which maps tokens first in a V4.1 layer group) the token map is
        # the CommonAttentionMetadata's own method on this buffer.
        self.t2r_buffer = self._zeros(capacity)

    def _setup(self, rel, device: str, capacity: int, max_reqs: int, max_width: int, consts: dict):
        """What every model's suite holds: torch, the release, the sizes, the constants and the
        release's CommonAttentionMetadata."""
        import torch
        self.torch = torch
        self.rel = rel
        self.device = torch.device(device)
        self.consts = consts
        self.K = int(consts["spec_k"])
        self.capacity = capacity
        self.max_reqs = max_reqs
        self.max_width = max_width
        self.backend = rel.module("vllm.v1.attention.backend")
        self.CM = self.backend.CommonAttentionMetadata
        self.notes: list[str] = []

    # The SM100 path: the builders consult current_platform for DeepGEMM's varlen paged MQA
    # logits (capability family 100). The oracle sets supports_varlen on the indexer builders
    # (the attribute __init__ derives from that check), so nothing of the platform is patched.
    def _force_sm100(self):
        self.notes.append("SM100 path forced: DeepseekV32IndexerMetadataBuilder.supports_varlen = True "
                          "(what __init__ derives on capability family 100)")

    def _zeros(self, *shape, dtype=None):
        t = self.torch
        return t.zeros(*shape, dtype=dtype or t.int32, device=self.device)

    def _new(self, cls, **attrs):
        b = object.__new__(cls)
        # What every builder's __init__ sets from the parallel config: no PCP, no DCP.
        for k, v in dict(pcp_size=1, pcp_rank=0, pcp_world_size=1, dcp_world_size=1, dcp_rank=0,
                         use_pcp=False).items():
            setattr(b, k, v)
        for k, v in attrs.items():
            setattr(b, k, v)
        return b

    def _make_swa(self):
        t = self.torch
        cls = getattr(self.mla_mod, "DeepseekV41SparseSWAMetadataBuilder", None) or \
            self.swa_mod.DeepseekSparseSWAMetadataBuilder
        W = int(self.consts["swa_window"])
        n = self.capacity
        cu = self.swa_mod
        nc_width = cu.get_dspark_swa_index_width(W, self.K) if hasattr(cu, "get_dspark_swa_index_width") \
            else ((W + self.K + 63) // 64) * 64
        return self._new(
            cls, device=self.device, decode_threshold=1 + self.K, reorder_batch_threshold=None,
            window_size=W, block_size=int(self.consts["swa_block_size"]), compress_ratio=1,
            max_model_len=1 << 20, max_num_batched_tokens=n, num_speculative_tokens=self.K,
            max_image_tokens=0, prefill_index_width=W, _layer_types={"swaonly"},
            token_to_req_indices=self._zeros(n), decode_swa_indices=self._zeros(n, 1, W),
            decode_swa_lens=self._zeros(n), prefill_swa_indices=self._zeros(n, 1, W),
            prefill_swa_lens=self._zeros(n), is_valid_token=t.zeros(n, dtype=t.bool, device=self.device),
            is_dspark=True, noncausal_index_width=nc_width, decode_swa_indices_noncausal=None,
            _max_tokens=n, no_replay_start=self._zeros(self.max_reqs + 1),
            kv_cache_spec=_Cfg(block_size=int(self.consts["swa_block_size"]), tokens_per_state=1),
        )

    def _make_mla(self, ratio):
        t = self.torch
        bs = int(self.consts["mla_block_size"])
        return self._new(
            # DeepseekV4FlashMLAMetadataBuilder alone before 0.26.0 (DeepSeek-V4's 0.24.0 / 0.25.0)
            getattr(self.mla_mod, "DeepseekV4SparseMLAMetadataBuilder", None) or
            self.mla_mod.DeepseekV4FlashMLAMetadataBuilder, device=self.device, pcp_size=1, pcp_rank=0,
            topk_tokens=512, compress_ratio=ratio, req_id_per_token_buffer=self._zeros(self.capacity),
            compressed_slot_mapping_buffer=t.empty(self.capacity, dtype=t.int64, device=self.device),
            kv_cache_spec=_Cfg(block_size=bs, tokens_per_state=ratio, num_states=bs // ratio),
            model_config=_Cfg(), )

    def _make_ring(self):
        t = self.torch
        cap = int(self.consts.get("compressor_ring_capacity", ring_capacity(self.K)))
        return self._new(
            self.cmp_mod.CompressorMetadataBuilder, device=self.device, capacity=cap, pcp_size=1,
            token_to_req_indices=self._zeros(self.capacity),
            slot_mapping_buffer=t.empty(self.capacity, dtype=t.int64, device=self.device),
            tail_size=cap, kv_cache_spec=_Cfg(block_size=cap))

    def _make_indexer(self, ratio):
        t = self.torch
        n = self.capacity
        bs = int(self.consts["mla_block_size"])
        W = self.max_width
        ints = dict(dtype=t.int32, device=self.device)
        b = self._new(
            self.idx_mod.DeepseekV32IndexerMetadataBuilder, device=self.device, compress_ratio=ratio,
            kv_cache_spec=_Cfg(block_size=bs, tokens_per_state=ratio, num_states=bs // ratio),
            # 0.28.0/0.29.0 read adaptive verification from the speculative config; 0.30.0+ from
            # use_adaptive_verification. Both are set per step (main()).
            vllm_config=_Cfg(compilation_config=_Cfg(cudagraph_mode=None),
                             speculative_config=_Cfg(num_speculative_tokens=self.K,
                                                     enable_adaptive_verification=self.adaptive)),
            num_speculative_tokens=self.K, decode_threshold=1 + self.K,
            use_flattening=False, supports_varlen=True, use_pcp=False, use_shardq=False,
            kernel_block_size=None, tp_size=1, tp_rank=0,
            pcp_world_size=1, pcp_rank=0, dcp_world_size=1, dcp_rank=0, cp_kv_cache_interleave_size=1,
            compressed_cp_interleave_size=1, use_adaptive_verification=self.adaptive,
            fused_mqa_topk_eligible=False, num_sms=132,
            max_prefill_buffer_size=(1 << 20) * 40,
            compressed_slot_mapping_buffer=t.empty(n, dtype=t.int64, device=self.device),
            decode_lens_buffer=t.zeros(n, **ints), per_req_decode_lens_buffer=t.zeros(n, **ints),
            decode_seq_lens_buffer=t.zeros(n, **ints), decode_indices_buffer=t.zeros(n, **ints),
            expanded_seq_lens_buffer=t.zeros(n, **ints), global_decode_seq_lens_buffer=t.zeros(n, **ints),
            expanded_block_table_buffer=t.zeros((n, W), **ints), arange_buffer=t.arange(n, **ints),
            scheduler_metadata_buffer=t.zeros((133, 2), **ints),
            offsets_buffer=t.zeros(n, **ints))
        return b

    adaptive = True  # set per run: whether the step is built under adaptive verification

    # --------------------------------------------------------------- one step

    def common(self, step: Step):
        t = self.torch
        z = step.sizes
        R, N = z["num_reqs"], z["num_tokens"]
        dev = self.device
        qsl = t.from_numpy(step.device["query_start_loc"].astype(np.int32)).to(dev)
        qsl_cpu = t.from_numpy(step.host["query_start_loc"].astype(np.int32).copy())
        seq = t.from_numpy(step.device["seq_lens"].astype(np.int32)).to(dev)
        seq_cpu = t.from_numpy(step.host["seq_lens"].astype(np.int32).copy())
        bt_full = step.device["block_table"].astype(np.int32)
        bt_store = t.zeros((R, max(z["bt_stride"], 1)), dtype=t.int32, device=dev)
        bt_store[:, :bt_full.shape[1]] = t.from_numpy(bt_full).to(dev)
        bt = bt_store[:, :z["bt_width"]]  # a view: its row stride is the layout's
        slots = t.from_numpy(step.device["slot_mapping"].astype(np.int64)).to(dev)
        # positions as the GPU runner writes them: seq_len - qlen + offset for real tokens;
        # graph padding rows hold 0 (the runner's dummy batch zeroes them).
        q = step.device["query_start_loc"]
        pos = np.zeros(N, np.int64)
        for r in range(R):
            s, e = int(q[r]), int(q[r + 1])
            ctx = int(step.device["seq_lens"][r]) - (e - s)
            pos[s:e] = ctx + np.arange(e - s)
        hq = step.host["query_start_loc"]
        max_q = int(np.max(np.diff(hq))) if R > 0 else 0
        cm = self.CM(
            query_start_loc=qsl, query_start_loc_cpu=qsl_cpu, seq_lens=seq, num_reqs=R,
            num_actual_tokens=N, max_query_len=max_q,
            max_seq_len=int(step.host["seq_lens"].max()) if R else 0,
            block_table_tensor=bt, slot_mapping=slots, causal=step.causal,
            positions=t.from_numpy(pos).to(dev), seq_lens_cpu_upper_bound=seq_cpu)
        return cm

    def time_suite(self, step: Step, reps: int = 20) -> dict:
        """The release's five builders on one step, eager (vLLM builds metadata eagerly; 0.33.0+
        records uniform decode builds in graphs, not modelled here), cold L2 (a 256 MiB buffer is
        rewritten before each rep, as bench does), CUDA events; the floor is an empty event pair.
        Host time of the Python builders is inside the interval, as in vLLM."""
        base = self.common(step)

        def suite():
            cm = dataclasses.replace(base, _token_to_req_indices_cache=None, _num_computed_tokens_cache=None)
            if self.swa is None:
                cm.token_to_req_indices(self.t2r_buffer)
            for b in (self.swa, self.mla_r2, self.ring, *self.indexer):
                if b is not None:
                    b.build(0, cm)

        return self.time_eager(suite, reps)

    def time_eager(self, suite, reps: int) -> dict:
        """suite() timed as time_suite says: a warm-up, then `reps` runs each after a 256 MiB
        rewrite (cold L2), between CUDA events; the floor is an empty event pair."""
        t = self.torch
        flush = t.empty(256 << 20, dtype=t.uint8, device=self.device)

        def once(fn):
            flush.zero_()
            t.cuda.synchronize()
            a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            return a.elapsed_time(b) * 1000.0

        suite()  # warm-up: Triton compilation stays out
        us = sorted(once(suite) for _ in range(reps))
        floor = sorted(once(lambda: None) for _ in range(reps))
        return {"median_us": us[len(us) // 2], "p10_us": us[len(us) // 10], "floor_us": floor[len(floor) // 2],
                "reps": reps, "method": "eager, cold L2, CUDA events"}

    def _swa_outputs(self, cm, swa_md, out, N, ndt):
        nd_rel, np_rel = swa_md.num_decode_tokens, swa_md.num_prefill_tokens
        W = int(self.consts["swa_window"])
        lens = np.zeros(N, np.int32)
        idx = np.full((N, W), -1, np.int32)
        if nd_rel:
            lens[:nd_rel] = swa_md.decode_swa_lens.cpu().numpy()
            if cm.causal:
                idx[:nd_rel] = swa_md.decode_swa_indices.reshape(nd_rel, -1)[:, :W].cpu().numpy()
            else:
                out["swa.swa_indices_noncausal"] = swa_md.decode_swa_indices.reshape(nd_rel, -1).cpu().numpy()
        if np_rel:
            lens[nd_rel:nd_rel + np_rel] = swa_md.prefill_swa_lens.cpu().numpy()
            idx[nd_rel:nd_rel + np_rel] = swa_md.prefill_swa_indices.reshape(np_rel, -1)[:, :W].cpu().numpy()
        out["swa.swa_lens"] = lens
        out["swa.swa_indices"] = idx if cm.causal else idx[ndt:]
        gl = getattr(swa_md, "prefill_gather_lens", None)
        if gl is not None:
            out["swa.prefill_gather_lens"] = gl.cpu().numpy().astype(np.int32)
        self._split = (swa_md.num_decodes, swa_md.num_decode_tokens)

    def run(self, step: Step, profile=None):
        """Runs the suite on one step; returns {"builder.field": np.ndarray} in our regions."""
        t = self.torch
        z = step.sizes
        N, ndt, C = z["num_tokens"], z["num_decode_tokens"], z["capacity"]
        cm = self.common(step)
        out = {}
        launches = {}
        call = launch_counting(profile, launches)

        # The token map first, on its own, so that each builder's launch count is its own: in a
        # V4.1 layer group the SWA builder maps the tokens (the CommonAttentionMetadata's cached
        # mapping) and every later builder reuses the cache.
        if "token_map" in self.builders:
            t2r = call("token_map", lambda: cm.token_to_req_indices(self.t2r_buffer))
            out["token_map.token_to_req"] = t2r[:N].cpu().numpy().astype(np.int32)
        elif self.swa is not None:
            cm.token_to_req_indices(self.t2r_buffer)  # the map SWA would build: run, not compared
        self._split = None
        if self.swa is not None:
            warm_noncausal_swa(self.swa, cm, profile)
            swa_md = call("swa", lambda: self.swa.build(0, cm))
            self._swa_outputs(cm, swa_md, out, N, ndt)

        if self.mla_r2 is not None:
            call("mla_r2", lambda: self.mla_r2.build(0, cm))
            out["mla_r2.compressed_slots"] = self.mla_r2.compressed_slot_mapping_buffer[:C].cpu().numpy()
        if self.ring is not None:
            ring = call("ring", lambda: self.ring.build(0, cm))
            out["mla_r2.ring_slots"] = ring.slot_mapping[:N].cpu().numpy()
        for k, b in enumerate(self.indexer):
            if b is None:
                continue
            if self.old_indexer_chain and b.expanded_block_table_buffer.shape[1] != z["bt_width"]:
                b.expanded_block_table_buffer = self._zeros(self.capacity, z["bt_width"])
            md = call(f"indexer_r{k + 1}", lambda: b.build(0, cm))
            if self._split is None:
                self._split = (md.num_decodes, md.num_decode_tokens)
            pre = f"indexer_r{k + 1}."
            if k == 1:
                out[pre + "compressed_slots"] = b.compressed_slot_mapping_buffer[:C].cpu().numpy()
            if md.decode is not None:
                d = md.decode
                nd = md.num_decodes
                sl = d.seq_lens.reshape(-1)
                if k == 0:
                    out[pre + "seq_out"] = b.decode_seq_lens_buffer[:C].cpu().numpy()
                else:
                    out[pre + "seq_out"] = sl[:ndt].cpu().numpy()
                out[pre + "bt_out"] = d.block_table[:ndt, :z["bt_width"]].cpu().numpy()
                out[pre + "decode_lens"] = d.decode_lens[:ndt].cpu().numpy()
                out[pre + "indices"] = d.indices[:ndt].cpu().numpy()
                # per_req_decode_lens and the host decisions appear in 0.30.0's decode metadata
                if getattr(d, "per_req_decode_lens", None) is not None:
                    out[pre + "per_req"] = d.per_req_decode_lens[:nd].cpu().numpy()
                if hasattr(d, "write_max_decode_len"):
                    out[pre + "_host.max_decode_len"] = np.array([d.write_max_decode_len], np.int32)
                    out[pre + "_host.decode_is_uniform"] = np.array([int(d.decode_is_uniform)], np.int32)
            if md.prefill is not None:
                prefill_chunk_outputs(md.prefill, pre, out)
        return out, launches


# ----------------------------------------------------------------------------- compare


def classify(step: Step, key: str, i: int, got, ours_v, rows_uncleared=None, row_width=None) -> str:
    """One differing cell: stale-host, padding-residue, or bug (the project's three kinds)."""
    if key in step.hostref:
        h = step.hostref[key].reshape(-1)
        if i < h.size and h[i] == got:
            return "stale-host"
    z = step.sizes
    if key.startswith("indexer_") and key.endswith(".bt_out"):
        W = max(z["bt_width"], 1)
        row, col = divmod(i, W)
        A = int(step.device["query_start_loc"][z["num_decodes"]])
        if A <= row < z["num_decode_tokens"] and col >= 1:
            return "padding-residue"
    if key == "mla_r2.ring_slots" and i >= int(step.device["query_start_loc"][z["num_reqs"]]):
        return "padding-residue"  # graph padding rows: vLLM maps them to request 0's ring slot
    if key in ("swa.swa_indices", "swa.swa_indices_noncausal") and rows_uncleared is not None:
        W = row_width or int(step.consts.get("swa_window", 128))
        # a draft step's causal rows start at N_d; its non-causal rows are the decode rows from 0
        first = 0 if step.causal or key.endswith("_noncausal") else z["num_decode_tokens"]
        if first + i // W in rows_uncleared:
            return "padding-residue"  # kept: swa-rows-uncleared
    return "bug"


def compare(step: Step, got: dict) -> list[dict]:
    diffs = []
    for key, mine in sorted(step.ours.items()):
        if key not in got:
            continue
        theirs = got[key]
        a = np.asarray(mine).reshape(-1)
        b = np.asarray(theirs).reshape(-1)
        if key == "mla_r2.ring_slots":  # kept: ring-tail-unwritten
            a = a[:step.sizes["num_tokens"]]
        if key.endswith(".prefill_token_to_seq") and b.size > a.size:  # kept: token-to-seq-rows-kept
            b = b[:a.size]
        n = min(a.size, b.size)
        if a.size != b.size:
            # On a step whose host split is stale, an indexer field whose extent the builder takes
            # from the host (the native path's uniform split and L, states (a) / (b)) has the
            # host's extent in the release and the device truth's in ours: stale-host.
            host_split_stale = not np.array_equal(step.host["query_start_loc"], step.device["query_start_loc"])
            kind = "stale-host" if key.startswith("indexer_") and host_split_stale else "bug"
            diffs.append({"step": step.name, "field": key, "kind": kind, "cells": abs(a.size - b.size),
                          "note": f"shape: ours {list(np.shape(mine))}, release {list(np.shape(theirs))}"})
        bad = np.nonzero(a[:n].astype(np.int64) != b[:n].astype(np.int64))[0]
        if bad.size == 0:
            continue
        kinds: dict = {}
        uncleared = got.get("swa._rows_uncleared")
        uncleared = set(int(r) for r in uncleared) if uncleared is not None else None
        for i in bad:
            k = classify(step, key, int(i), b[i], a[i], uncleared,
                         np.shape(mine)[1] if np.ndim(mine) == 2 else None)
            kinds.setdefault(k, []).append(int(i))
        for k, cells in kinds.items():
            i = cells[0]
            d = {"step": step.name, "field": key, "kind": k, "cells": len(cells),
                 "first_index": i, "ours": int(a[i]), "release": int(b[i])}
            if key == "mla_r2.ring_slots" and k == "padding-residue":
                d["kept"] = "ring-padding-rows"
            if key.startswith("swa.swa_indices") and k == "padding-residue":
                d["kept"] = "swa-rows-uncleared"
            diffs.append(d)
    return diffs


# ----------------------------------------------------------------------------- launches


def warm_noncausal_swa(builder, cm, profile) -> None:
    """Before a profiled non-causal (DSpark draft) SWA build: a builder allocates its non-causal
    index buffer (torch.zeros, one fill) on its first such build, once in an engine's life. One
    unprofiled build on a copy of `cm` (no token map cached in `cm` by it) makes that allocation,
    so the profiled build counts only what every draft step issues."""
    if profile is None or getattr(cm, "causal", True) or getattr(builder, "decode_swa_indices_noncausal", 0) is not None:
        return
    warm = copy.copy(cm)
    if hasattr(warm, "_token_to_req_indices_cache"):
        warm._token_to_req_indices_cache = None
    builder.build(0, warm)


def make_profiler(device):
    """fn -> (result, kernel launches + copies + fills issued on the device) via torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    if device != "cuda":
        return None

    def run(fn):
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            res = fn()
            torch.cuda.synchronize()
        n = 0
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                n += 1
        return res, n

    return run


def our_launches(sim: str, impl: str, model: str = "v4.1") -> dict:
    """`dspark-sim verify --json`: our implementation's launches per seed case (batch 16, seed 4)."""
    with tempfile.TemporaryDirectory(prefix="dspark-oracle-verify-") as tmp:
        path = os.path.join(tmp, "verify.json")
        p = subprocess.run([sim, "verify", "--model", model, "--impl", impl, "--json", path], capture_output=True,
                           text=True)
        if not os.path.exists(path):
            return {"error": f"verify exited {p.returncode}: {p.stderr.strip()[:300]}"}
        with open(path) as f:
            j = json.load(f)
    return {"seed_cases": j.get("seed_cases", {}), "verify_exit": p.returncode}


def compare_launches(ours: dict, per_step: list) -> dict:
    """Our launches per seed case (verify --json) beside the release's profiled count for the same
    case (a step report named CASE.json); and, under "dumped_steps", every profiled dumped step
    whose report gave our launches (--ours-from-sim) beside the release's count of that step."""
    seed = ours.get("seed_cases", {}) if isinstance(ours, dict) else {}
    mine = next(iter(seed.values()), {}) if len(seed) == 1 else {}
    rows = {}
    dumped = {"profiled": 0, "equal": 0, "unequal": []}
    for row in per_step:
        case = row["step"][:-5] if row["step"].endswith(".json") else None
        if case is None and "release_launches" in row and "ours_launches" in row:
            release = row["release_launches"]["total"]
            # a recorded graph's build has one launch more: the second branch's token map
            want = release + 1 if row.get("ours_graph_launches") else release
            dumped["profiled"] += 1
            if row["ours_launches"] == want:
                dumped["equal"] += 1
            elif len(dumped["unequal"]) < 20:
                dumped["unequal"].append({"step": row["step"], "ours": row["ours_launches"], "release": release,
                                          "release_by_builder": row["release_launches"]})
        if case is None or "release_launches" not in row:
            continue
        ours_case = mine.get(case, {})
        ours_n = ours_case.get("launches")
        rows[case] = {"ours": ours_n, "release": row["release_launches"]["total"],
                      "release_by_builder": row["release_launches"],
                      "equal": ours_n == row["release_launches"]["total"]}
        if ours_case.get("graph_launches"):
            # vllm-0.34 replays this step's recorded build: 1 graph launch whose branches
            # (AttnMetadataCudaGraphs._forked_build) each build their own token map, one launch
            # more than the release's eager builders, which are what is profiled here.
            rows[case].update({"ours_graph_launches": ours_case["graph_launches"],
                               "equal": ours_n == row["release_launches"]["total"] + 1,
                               "note": "recorded graph: ours = the release's eager launches + the second "
                                       "branch's token map (AttnMetadataCudaGraphs itself is not run)"})
    if dumped["profiled"]:
        rows["dumped_steps"] = dumped
    return rows


# ----------------------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", required=True, help="vLLM version, e.g. 0.34.0 (scripts/fetch-vllm.sh)")
    ap.add_argument("--cache-dir", default=None, help="where the release trees are (default "
                    "$DSPARK_VLLM_CACHE or <repo>/.vllm-cache)")
    ap.add_argument("--steps", nargs="*", default=[], help="`dspark-sim step --out` reports")
    ap.add_argument("--dump", action="append", default=[], help="a `run --dump-steps` folder")
    ap.add_argument("--limit", type=int, default=None, help="at most this many steps per dump")
    ap.add_argument("--stride", type=int, default=1, help="every Nth dumped step (a sample for CPU runs)")
    ap.add_argument("--sim", default=None, help="dspark-sim binary: our launch counts via `verify --json`")
    ap.add_argument("--ours-from-sim", action="store_true",
                    help="with --sim: our outputs of each dumped step from `dspark-sim step --impl` "
                    "(one process per step) instead of the dump's ref.* fields")
    ap.add_argument("--profile-every", type=int, default=1,
                    help="on a GPU, count launches with torch.profiler on every Nth dumped step (every "
                    "step report is profiled)")
    ap.add_argument("--impl", default=None,
                    help="our implementation compared (default: the release's own state, vllm-0.34 for 0.34.0, "
                         "vllm-0.31 otherwise; an alias of the step report's one implementation is accepted)")
    ap.add_argument("--builders", default=",".join(BUILDERS),
                    help="the release's builders to run and compare, a comma list of "
                    f"{', '.join(BUILDERS)} (default all). A release without DeepSeek-V4.1 (before 0.30.0) "
                    "runs only token_map and the indexers: a state assembled from several releases is "
                    "checked builder by builder, one release per process")
    ap.add_argument("--model", choices=("v4.1", "v4"), default="v4.1",
                    help="the model layout: v4.1 (the release's DeepSeek-V4.1 builders, 0.30.0 on) or v4 "
                    "(its DeepSeek-V4 builders, oracle_v4.py: the states (a)-(c) of 0.24.0-0.29.0); dumped "
                    "steps are passed to `dspark-sim step --model` with --ours-from-sim")
    ap.add_argument("--device", default=None, help="cuda or cpu (default cuda when available)")
    ap.add_argument("--adaptive", choices=("auto", "on", "off"), default="auto",
                    help="the indexer builder's use_adaptive_verification (a process-wide setting in "
                    "vLLM): auto = on for a dump of a run with adaptive verification (its argv) and "
                    "for the seed's adaptive_* cases")
    ap.add_argument("--no-timing", action="store_true",
                    help="on a GPU, do not time the release's suite on the step reports")
    ap.add_argument("--save-outputs", default=None,
                    help="also write each step's release outputs to this folder (one .npz per step)")
    ap.add_argument("--out", required=True, help="the JSON report")
    args = ap.parse_args(argv)
    builders = [b.strip() for b in args.builders.split(",") if b.strip()]
    unknown = [b for b in builders if b not in BUILDERS]
    if unknown or not builders:
        ap.error(f"--builders: unknown builder(s) {unknown or '(none given)'}; expected a comma list of "
                 f"{', '.join(BUILDERS)}")

    try:
        import torch
    except ImportError:
        print("vllm_oracle: skipped: torch is not importable here (the release's code needs torch)")
        return 0
    import vllm_loader

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" and not vllm_loader.interpreting():
        os.environ["TRITON_INTERPRET"] = "1"  # before the release imports triton_utils
    t0 = time.time()
    rel = vllm_loader.load(args.release, args.cache_dir)
    if args.impl is None:  # the release's own state
        own_v4 = {"0.24.0": "vllm-0.24", "0.27.1": "vllm-0.27", "0.29.0": "vllm-0.29"}
        args.impl = (own_v4.get(rel.version, "vllm-0.29") if args.model == "v4"
                     else "vllm-0.34" if rel.version == "0.34.0" else "vllm-0.31")

    steps = []
    for path in args.steps:
        with open(path) as f:
            steps.append(step_from_result(json.load(f), args.impl, os.path.basename(path)))
    dumps = []
    for d in args.dump:
        n = 0
        for step, entry, index in load_dump(d, args.limit, args.stride):
            if args.model == "v4":
                step.consts = {**step.consts, "model": "v4"}
            if args.sim and args.ours_from_sim:
                ours_from_sim(args.sim, args.impl, step, entry)
            step.profile = n % max(args.profile_every, 1) == 0
            steps.append(step)
            n += 1
        dumps.append({"dir": d, "steps": n, "meta": index.get("meta", {})})
    if not steps:
        print("vllm_oracle: no steps given (--steps or --dump)", file=sys.stderr)
        return 2

    capacity = max(max(s.sizes["capacity"], s.sizes["num_tokens"], 1) for s in steps)
    max_reqs = max(s.sizes["num_reqs"] for s in steps)
    max_width = max(max(s.sizes["bt_width"], 1) for s in steps)
    if args.model == "v4" or steps[0].consts.get("model") == "v4":
        import oracle_v4
        width = max(oracle_v4.c128a_width(int(np.max(s.host["seq_lens"])) if s.sizes["num_reqs"] else 0)
                    for s in steps)
        suite = oracle_v4.ReleaseSuiteV4(rel, device, capacity, max_reqs, max_width, steps[0].consts, width)
        args.model = "v4"
    else:
        try:
            suite = ReleaseSuite(rel, device, capacity, max_reqs, max_width, steps[0].consts, builders=builders)
        except RuntimeError as e:
            print(f"vllm_oracle: {e}", file=sys.stderr)
            return 2
    profiler = make_profiler(device)

    diffs, per_step, launch_rows = [], [], []
    step_keys: dict = {}
    errors = []
    for step in steps:
        suite.adaptive = args.adaptive == "on" or (args.adaptive == "auto" and step.adaptive_run)
        for b in suite.indexer:
            if b is not None:
                b.use_adaptive_verification = suite.adaptive
                spec = getattr(getattr(b, "vllm_config", None), "speculative_config", None)
                if spec is not None:  # 0.28.0/0.29.0 read it from the speculative config
                    spec.enable_adaptive_verification = suite.adaptive
        try:
            got, launches = suite.run(step, profiler if step.profile else None)
        except Exception as e:  # one step's failure is reported, the others still run
            errors.append({"step": step.name, "error": f"{type(e).__name__}: {e}"})
            if os.environ.get("DSPARK_ORACLE_TRACEBACK"):
                import traceback
                traceback.print_exc()
            continue
        if args.save_outputs:
            os.makedirs(args.save_outputs, exist_ok=True)
            np.savez(os.path.join(args.save_outputs, step.name.replace("/", "_") + ".npz"), **got)
        d = compare(step, got)
        diffs += d
        step_keys[step.name] = [k for k in step.ours if k not in got and not k.startswith("prefill_segments.")]
        nd = suite._split
        row = {"step": step.name, "adaptive_run": step.adaptive_run, "compared": sorted(k for k in step.ours if k in got),
               "differences": len(d), "release_split": list(nd) if nd else None,
               "our_split": [step.sizes["num_decodes"], step.sizes["num_decode_tokens"]],
               "host": {k: int(v[0]) for k, v in got.items() if "._host." in k}}
        if device == "cuda" and step.ours_source.startswith("dspark-sim step") and not args.no_timing:
            try:
                row["release_time"] = suite.time_suite(step)
            except Exception as e:  # timing is an extra; the comparison stands without it
                row["release_time"] = {"error": f"{type(e).__name__}: {e}"}
        if launches:
            deepgemm = 2 * sum(1 for k in ("r1", "r2", "c4") if f"indexer_{k}.decode_lens" in got)
            row["release_launches"] = {**launches, "deepgemm": deepgemm,
                                       "total": sum(launches.values()) + deepgemm}
            if step.ours_launches is not None:
                row["ours_launches"] = step.ours_launches
                if step.ours_graph_launches:
                    row["ours_graph_launches"] = step.ours_graph_launches
        per_step.append(row)

    kinds: dict = {}
    for d in diffs:
        kinds[d["kind"]] = kinds.get(d["kind"], 0) + d["cells"]
    report = {
        "meta": {
            "schema": SCHEMA, "schema_version": SCHEMA_VERSION,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "argv": sys.argv if argv is None else ["vllm_oracle.py", *argv],
            "release": rel.version, "release_tree": os.path.join("$DSPARK_VLLM_CACHE", rel.version), "impl": args.impl,
            "model": "DeepSeek-V4" if args.model == "v4" else "DeepSeek-V4.1",
            "device": device, "torch": torch.__version__,
            "triton_interpret": vllm_loader.interpreting(),
            "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
            "adaptive_verification": args.adaptive,
            "notes": suite.notes, "seconds": round(time.time() - t0, 1),
        },
        "inputs": {"step_reports": args.steps, "dumps": dumps},
        "steps": len(steps), "steps_run": len(per_step), "errors": errors,
        "differences_by_kind": kinds,
        "kept_on_purpose": {k: {"field": v[0], "why": v[1]} for k, v in KEPT.items()},
        "not_compared": NOT_COMPARED,
        "builders": list(getattr(suite, "builders", ())),
        # our fields that the builders run here do not produce (another builder's, or a field the
        # release's builder does not have, e.g. per_req before 0.30.0)
        "ours_without_release_field": sorted({k for ks in step_keys.values() for k in ks}),
        "launches": "n/a (no GPU: torch.profiler counts device launches only on CUDA)"
        if profiler is None else "per step in per_step[].release_launches",
        "differences": diffs[:2000], "differences_total": len(diffs),
        "per_step": per_step,
    }
    if args.sim:
        report["ours_launches"] = our_launches(args.sim, args.impl, args.model)
        report["launch_comparison"] = compare_launches(report["ours_launches"], per_step)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    bugs = kinds.get("bug", 0)
    print(f"vllm_oracle: vLLM {rel.version} vs {args.impl}: {len(per_step)}/{len(steps)} steps, "
          f"differing cells by kind {kinds or '{}'}, {len(errors)} errors -> {args.out}")
    return 1 if (bugs or errors) else 0


if __name__ == "__main__":
    sys.exit(main())
