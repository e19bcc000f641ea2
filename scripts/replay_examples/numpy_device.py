"""Worked example for scripts/replay_steps.py on the CPU: the token map and the indexer decode
metadata of vLLM #56562 (docs/design.md s.3), in numpy, read from the DEVICE boundaries only. On any
dump it must give 0 differences of every kind.

    python3 scripts/replay_steps.py DIR --impl scripts/replay_examples/numpy_device.py:build
"""
import numpy as np


def token_to_req(qsl, num_tokens):
    # Token t < qsl[R] belongs to the first request whose end exceeds it; graph padding maps to 0.
    total = int(qsl[-1])
    out = np.zeros(num_tokens, dtype=np.int32)
    t = np.arange(min(total, num_tokens))
    out[: t.size] = np.searchsorted(qsl[1:], t, side="right")
    return out


def indexer_decode(step):
    s = step.sizes
    nd, n_d, cap, width = s["num_decodes"], s["num_decode_tokens"], s["capacity"], s["bt_width"]
    qsl = step.device["query_start_loc"][: nd + 1].astype(np.int64)
    seq = step.device["seq_lens"][:nd].astype(np.int64)
    bt = step.device["block_table"]
    actual = int(qsl[nd]) if nd > 0 else 0
    t = np.arange(n_d)
    valid = t < actual
    r = np.searchsorted(qsl[1:], np.minimum(t, max(actual - 1, 0)), side="right") if nd > 0 else np.zeros_like(t)
    start, end = (qsl[r], qsl[r + 1]) if nd > 0 else (t * 0, t * 0)
    seq_out = np.zeros(cap, dtype=np.int32)
    if nd > 0:
        seq_out[:n_d] = np.where(valid, seq[r] - (end - start) + (t - start) + 1, 0)
    bt_out = np.zeros((n_d, width), dtype=np.int32)
    if nd > 0:
        bt_out[valid] = bt[r[valid], :width]
    return {
        "seq_out": seq_out,
        "bt_out": bt_out,
        "decode_lens": np.ones(n_d, dtype=np.int32),
        "indices": np.where(valid, r, nd + t - actual).astype(np.int32),
        "per_req": np.diff(qsl).astype(np.int32),
    }


def build(step):
    out = {"token_map.token_to_req": token_to_req(step.device["query_start_loc"], step.sizes["num_tokens"])}
    for name, value in indexer_decode(step).items():
        out["indexer_r1." + name] = value
    return out
