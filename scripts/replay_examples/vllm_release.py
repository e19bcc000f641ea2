"""Worked example for scripts/replay_steps.py: a released vLLM's own #56562 kernels (the token map
and the SM100 varlen indexer decode metadata of vllm/v1/attention/ops/metadata.py), imported from
the release's tree by scripts/oracle/vllm_loader.py and called as the release's builders call
them. Nothing here re-implements vLLM: the kernels are the release's.

    DSPARK_VLLM_RELEASE=0.34.0 python3 scripts/replay_steps.py DIR --device cuda \
        --impl scripts/replay_examples/vllm_release.py:build [--graphs]

The release (default 0.34.0; 0.30.0 or later) comes from $DSPARK_VLLM_CACHE (scripts/fetch-vllm.sh).
On the CPU it runs through Triton's interpreter (TRITON_INTERPRET=1, set here when no GPU is
visible): slow, for a few steps.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))

import torch  # noqa: E402

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import vllm_loader  # noqa: E402

_release = vllm_loader.load(os.environ.get("DSPARK_VLLM_RELEASE", "0.34.0"))
_meta = _release.module("vllm.v1.attention.ops.metadata")
_buffers = {}


def _outputs(step, dev):
    # Persistent outputs per padded shape, like an engine's: allocated once, rewritten in place.
    key = step.shape_key()
    if key not in _buffers:
        s = step.sizes
        cap, width, ndt = s["capacity"], max(s["bt_width"], 1), max(s["num_decode_tokens"], 1)
        i32 = dict(dtype=torch.int32, device=dev)
        _buffers[key] = {
            "token_map.token_to_req": torch.zeros(max(cap, s["num_tokens"]), **i32),
            "indexer_r1.seq_out": torch.zeros(cap, **i32),
            "indexer_r1.bt_out": torch.zeros(max(cap, ndt), width, **i32),
            "indexer_r1.decode_lens": torch.zeros(cap, **i32),
            "indexer_r1.indices": torch.zeros(cap, **i32),
            "indexer_r1.per_req": torch.zeros(max(cap, s["num_decodes"], 1), **i32),
        }
    return _buffers[key]


def build(step):
    s = step.sizes
    d = step.device
    on_host = isinstance(d["query_start_loc"], np.ndarray)  # --device cpu hands numpy arrays
    if on_host:
        d = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in d.items()}
    qsl = d["query_start_loc"]
    dev = qsl.device
    out = _outputs(step, dev)
    R, N = s["num_reqs"], s["num_tokens"]
    # CommonAttentionMetadata.token_to_req_indices: num_mapped = int(query_start_loc_cpu[-1]),
    # the HOST total, over max(num_mapped, num_actual_tokens) entries.
    num_mapped = int(step.host["query_start_loc"][-1])
    t2r = out["token_map.token_to_req"]
    _meta.compute_token_to_req_indices(qsl, t2r, num_mapped, max(num_mapped, N))
    result = {"token_map.token_to_req": t2r[:N]}
    nd, ndt, cap = s["num_decodes"], s["num_decode_tokens"], s["capacity"]
    if nd > 0:
        # DeepseekV32IndexerMetadataBuilder.build, supports_varlen (SM100): its grid and arguments.
        bt = d["block_table"][:nd, : s["bt_width"]]
        ebt = out["indexer_r1.bt_out"]
        grid = max(nd, ndt + (cap - ndt + 255) // 256)
        _meta._indexer_decode_metadata_kernel[(grid,)](
            qsl, d["seq_lens"], bt, out["indexer_r1.seq_out"], ebt, out["indexer_r1.decode_lens"],
            out["indexer_r1.indices"], out["indexer_r1.per_req"], nd, ndt, cap, bt.stride(0), ebt.stride(0),
            BLOCK_COLS=bt.shape[1], num_warps=4)
        result.update({
            "indexer_r1.seq_out": out["indexer_r1.seq_out"][:cap],
            "indexer_r1.bt_out": ebt[:ndt, : s["bt_width"]],
            "indexer_r1.decode_lens": out["indexer_r1.decode_lens"][:ndt],
            "indexer_r1.indices": out["indexer_r1.indices"][:ndt],
            "indexer_r1.per_req": out["indexer_r1.per_req"][:nd],
        })
    if on_host:
        return {k: v.numpy() for k, v in result.items()}
    return result
