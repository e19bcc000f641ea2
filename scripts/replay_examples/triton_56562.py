"""Worked example for scripts/replay_steps.py on the GPU: the project's Triton version of vLLM
#56562's two kernels (scripts/triton_baseline.py: the token map and the SM100 varlen indexer
decode metadata). Its persistent outputs are allocated once per padded shape, as an engine's are.

    python3 scripts/replay_steps.py DIR --device cuda --impl scripts/replay_examples/triton_56562.py:build
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from triton_baseline import _indexer_kernel, _map_kernel  # noqa: E402

_buffers = {}


def _outputs(step):
    # Persistent outputs per padded shape, like an engine's: allocated once, rewritten by the graph.
    key = step.shape_key()
    if key not in _buffers:
        s = step.sizes
        cap, width = s["capacity"], s["bt_width"]
        dev = "cuda"
        _buffers[key] = {
            "token_map.token_to_req": torch.empty(s["num_tokens"], dtype=torch.int32, device=dev),
            "indexer_r1.seq_out": torch.empty(cap, dtype=torch.int32, device=dev),
            "indexer_r1.bt_out": torch.empty(max(s["num_decode_tokens"], 1), max(width, 1), dtype=torch.int32,
                                              device=dev),
            "indexer_r1.decode_lens": torch.empty(max(s["num_decode_tokens"], 1), dtype=torch.int32, device=dev),
            "indexer_r1.indices": torch.empty(max(s["num_decode_tokens"], 1), dtype=torch.int32, device=dev),
            "indexer_r1.per_req": torch.empty(max(s["num_decodes"], 1), dtype=torch.int32, device=dev),
        }
    return _buffers[key]


def build(step):
    s = step.sizes
    d = step.device
    out = _outputs(step)
    R, N = s["num_reqs"], s["num_tokens"]
    _map_kernel[(triton.cdiv(N, 256),)](d["query_start_loc"], out["token_map.token_to_req"], R, N, BLOCK=256,
                                        num_warps=4)
    nd, n_d, cap, width = s["num_decodes"], s["num_decode_tokens"], s["capacity"], s["bt_width"]
    result = {"token_map.token_to_req": out["token_map.token_to_req"]}
    if nd > 0 and width > 0:
        grid = max(nd, n_d + triton.cdiv(cap - n_d, 256))
        _indexer_kernel[(grid,)](d["query_start_loc"], d["seq_lens"], d["block_table"], out["indexer_r1.seq_out"],
                                 out["indexer_r1.bt_out"], out["indexer_r1.decode_lens"], out["indexer_r1.indices"],
                                 out["indexer_r1.per_req"], nd, n_d, cap, s["bt_stride"], width,
                                 BLOCK_COLS=triton.next_power_of_2(width), COLS=width, num_warps=4)
        result.update({k: v for k, v in out.items() if k.startswith("indexer_r1.")})
    return result
