"""Worked example for scripts/replay_steps.py: vLLM #47474's host mapping (state (b)),
np.repeat(arange(R), diff(qsl_cpu)) with a zeroed tail, in numpy. It reads the HOST boundaries,
so on an adaptive-verification dump its wrong cells are classified as stale-host divergence (and
never as bugs): the replay check's classification at work.

    python3 scripts/replay_steps.py DIR --impl scripts/replay_examples/numpy_host_map.py:build
"""
import numpy as np


def build(step):
    qsl = step.host["query_start_loc"]
    n = step.sizes["num_tokens"]
    mapping = np.repeat(np.arange(qsl.size - 1, dtype=np.int32), np.diff(qsl))
    out = np.zeros(n, dtype=np.int32)
    out[: min(n, mapping.size)] = mapping[:n]
    return {"token_map.token_to_req": out}
