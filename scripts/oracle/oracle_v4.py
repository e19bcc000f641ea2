"""DeepSeek-V4's builders of a released vLLM (0.24.0-0.29.0: states (a)-(c)), constructed as the
runner would, for the oracle (vllm_oracle.py --model v4). 0.24.0 and 0.27.1 (states (a), (b))
take the indexer's native decode path (no varlen chain before 0.28.0): its fields are the
per-request decode lengths and the [nd, L] lengths, on the indexer's own uniform split.

The KV-cache groups of DeepSeek-V4 (vllm/models/deepseek_v4/) and their builders, one each:
SWA (DeepseekSparseSWAMetadataBuilder), MLA C4A and C128A (DeepseekV4SparseMLAMetadataBuilder,
tokens_per_state 4 / 128), three CompressorMetadataBuilders (the C4A and C128A attention
compressors and the C4A indexer's compressor) and the indexer (DeepseekV32IndexerMetadataBuilder,
ratio 4). Up to 0.30.0 the runner hands every group its own shallow copy of the step's
CommonAttentionMetadata (`cm = copy(cm_base)`), so each group that reads token_to_req_indices
maps again; the oracle does the same.
"""

from __future__ import annotations

import copy

import numpy as np

from vllm_oracle import ReleaseSuite, _Cfg, launch_counting, prefill_chunk_outputs, warm_noncausal_swa

C128A_MAX = 8192  # cdiv(cdiv(max_model_len = 1M, 128), 128) * 128: sparse_mla.py's c128a_max_compressed
V4_BLOCK = 256    # FlashMLA's sparse V4 backend: kernel block size 256
MAPPING_GROUPS = ("swa", "mla_c4", "mla_c128", "compressor_c4", "compressor_c128", "compressor_indexer_c4")


def c128a_width(max_seq_len: int) -> int:
    n = max(max_seq_len // 128, 1)
    p = 1
    while p < n:
        p *= 2
    return min(max(p, 128), C128A_MAX)


class ReleaseSuiteV4(ReleaseSuite):
    """The release's DeepSeek-V4 builders."""

    def __init__(self, rel, device: str, capacity: int, max_reqs: int, max_width: int, consts: dict,
                 max_c128a_width: int = 128):
        self._setup(rel, device, capacity, max_reqs, max_width,
                    dict(consts, mla_block_size=V4_BLOCK, swa_block_size=V4_BLOCK))
        if not rel.has("vllm.models.deepseek_v4.sparse_mla"):
            raise RuntimeError(f"vLLM {rel.version} has no DeepSeek-V4 (models/deepseek_v4)")
        self.swa_mod = rel.module("vllm.v1.attention.backends.mla.sparse_swa")
        self.mla_mod = rel.module("vllm.models.deepseek_v4.sparse_mla")
        self.cmp_mod = rel.module("vllm.models.deepseek_v4.compressor")
        self.idx_mod = rel.module("vllm.v1.attention.backends.mla.indexer")
        self.varlen = hasattr(self.idx_mod.DeepseekV32IndexerMetadataBuilder, "_build_varlen_decode_indices")
        import inspect
        mla_cls = self._mla_class()
        # 0.26.0 on: C128A's active top-k width from max_seq_len and packed rows; 0.24.0/0.25.0 pass
        # the buffer's whole width (c128a_max_compressed) as the kernel's width and row stride.
        self.c128a_active_width = "active_topk_width" in inspect.getsource(mla_cls)
        # 0.25.0 on: the builders map through CommonAttentionMetadata.token_to_req_indices (#47474);
        # before, each builder maps on the host into its own buffer.
        self.cached_map = hasattr(self.CM, "token_to_req_indices")
        # 0.28.0 on: a token without a KV slot has its SWA row cleared to -1.
        self.swa_clears_rows = tuple(int(x) for x in rel.version.split(".")[:2]) >= (0, 28)
        # DSpark arrives in 0.25.0: before it, SWA has no non-causal (draft step) path, and a
        # draft step is a pairing the release never had (its SWA fields are not compared there).
        self.dspark_swa = "noncausal" in inspect.getsource(self.swa_mod)
        if not self.dspark_swa:
            self.notes.append(f"vLLM {rel.version} has no DSpark (0.25.0 on): on a draft step (non-causal) its SWA "
                              "builds causal rows; ours are a what-if there and SWA is not compared (swa-no-dspark)")
        if self.varlen:
            self.notes.append("SM100 path forced: DeepseekV32IndexerMetadataBuilder.supports_varlen = True")
        else:
            self.notes.append(f"vLLM {rel.version}'s indexer has no varlen path: the native decode path runs")
        self.notes.append("one CommonAttentionMetadata per KV-cache group (copy(cm_base)), six groups map tokens")
        if not self.c128a_active_width:
            self.notes.append(f"vLLM {rel.version}'s C128A kernel writes the buffer's whole width "
                              "(c128a_max_compressed, here the buffer's); columns past the active width "
                              "are checked to be -1 and dropped (c128a-full-width)")
        if not self.cached_map:
            self.notes.append(f"vLLM {rel.version} has no CommonAttentionMetadata.token_to_req_indices: each "
                              "builder maps on the host; the compared token map is sparse MLA C4A's "
                              "req_id_per_token (its buffer is filled with 0 first)")
        if self.device.type == "cpu" and not self.torch.cuda.is_available():
            # 0.24.0's builders call Tensor.pin_memory() on their host mapping, which needs a CUDA
            # driver; on the CPU route pinning changes nothing the builders compute.
            self.torch.Tensor.pin_memory = lambda x, *a, **k: x
            self.notes.append("CPU route: Tensor.pin_memory is the identity (no CUDA driver)")
        self.c128a_buf_width = max(128, max_c128a_width)
        self.swa = self._make_swa()
        self.mla = [self._make_mla_v4(4), self._make_mla_v4(128)]
        self.compressors = [self._make_compressor() for _ in range(3)]
        self.indexer = [self._make_indexer(4)]
        self.indexer[0].supports_varlen = self.varlen

    def _mla_class(self):
        m = self.mla_mod
        # 0.26.0 on: DeepseekV4SparseMLAMetadataBuilder (the FlashMLA one derives from it); before,
        # DeepseekV4FlashMLAMetadataBuilder alone.
        return getattr(m, "DeepseekV4SparseMLAMetadataBuilder", None) or m.DeepseekV4FlashMLAMetadataBuilder

    def _make_mla_v4(self, ratio):
        t = self.torch
        b = self._make_mla(ratio)
        b.kv_cache_spec = _Cfg(block_size=V4_BLOCK, tokens_per_state=ratio, num_states=V4_BLOCK // ratio,
                               storage_block_size=V4_BLOCK // ratio)
        b.reorder_batch_threshold = 1 + self.K
        if ratio == 128:
            n, w = self.capacity, self.c128a_buf_width
            b.c128a_max_compressed = C128A_MAX if self.c128a_active_width else w
            b.c128a_global_decode_buffer = t.full((n, w), -99, dtype=t.int32, device=self.device)
            b.c128a_decode_lens_buffer = t.full((n,), -99, dtype=t.int32, device=self.device)
            b.c128a_prefill_buffer = t.full((n, w), -99, dtype=t.int32, device=self.device)
        return b

    def _make_compressor(self):
        return self._new(self.cmp_mod.CompressorMetadataBuilder, device=self.device, block_size=V4_BLOCK,
                         token_to_req_indices=self._zeros(self.capacity),
                         kv_cache_spec=_Cfg(block_size=V4_BLOCK), vllm_config=_Cfg())

    def _make_indexer(self, ratio):
        b = super()._make_indexer(1)
        b.compress_ratio = ratio
        bs = V4_BLOCK
        b.kv_cache_spec = _Cfg(block_size=bs, tokens_per_state=ratio, num_states=bs // ratio,
                               storage_block_size=bs // ratio)
        b.vllm_config = _Cfg(compilation_config=_Cfg(cudagraph_mode=None),
                             speculative_config=_Cfg(enable_adaptive_verification=self.adaptive))
        # __init__: offsets_buffer = arange(next_n); reorder_batch_threshold = 1 + K (0.24.0's
        # split reads it, later releases decode_threshold).
        b.offsets_buffer = self.torch.arange(1 + self.K, dtype=self.torch.int32, device=self.device)
        b.reorder_batch_threshold = 1 + self.K
        return b

    def _c128a_rows(self, rows, active: int):
        """C128A rows at the active width: a release that writes the whole buffer width (0.24.0)
        must hold -1 past it (kept: c128a-full-width); otherwise the rows stay whole, and the shape
        differs from ours (a bug)."""
        a = rows.cpu().numpy()
        if a.shape[1] > active and not self.c128a_active_width and np.all(a[:, active:] == -1):
            a = a[:, :active]
        return a

    def time_suite(self, step, reps: int = 20) -> dict:
        """The release's DeepSeek-V4 builders on one step as run() builds them (SWA, MLA C4A and
        C128A, three compressors, the indexer, each KV-cache group on its own copy of the step's
        metadata), without reading any output back; timed as ReleaseSuite.time_eager says."""
        base = self.common(step)
        base.max_seq_len = int(step.host["seq_lens"].max()) if step.sizes["num_reqs"] else 0
        self._indexer_block_table(step)

        group_cm = lambda: self._group_copy(base)

        def suite():
            self.swa.build(0, group_cm())
            for b in (*self.mla, *self.compressors, self.indexer[0]):
                b.build(0, group_cm())

        return self.time_eager(suite, reps)

    @staticmethod
    def _group_copy(base):
        """The runner's per-KV-cache-group shallow copy of the step's metadata (copy(cm_base) up to
        0.30.0): no token map cached yet, so each group's builders map tokens themselves."""
        cm = copy.copy(base)
        cm._token_to_req_indices_cache = None
        return cm

    def _indexer_block_table(self, step) -> None:
        # The runner's block table is as wide as expanded_block_table_buffer (max blocks per
        # request); here each step's table is its own width, so the buffer follows it (one
        # persistent buffer per width).
        W = max(step.sizes["bt_width"], 1)
        if not hasattr(self, "_ebt"):
            self._ebt = {}
        if W not in self._ebt:
            self._ebt[W] = self.torch.zeros((self.capacity, W), dtype=self.torch.int32, device=self.device)
        self.indexer[0].expanded_block_table_buffer = self._ebt[W]

    def run(self, step, profile=None):
        t = self.torch
        z = step.sizes
        N, ndt, C = z["num_tokens"], z["num_decode_tokens"], z["capacity"]
        base = self.common(step)
        base.max_seq_len = int(step.host["seq_lens"].max()) if z["num_reqs"] else 0
        out, launches = {}, {}
        call = launch_counting(profile, launches)

        group_cm = lambda: self._group_copy(base)

        cm = group_cm()
        warm_noncausal_swa(self.swa, cm, profile)
        swa_md = call("swa", lambda: self.swa.build(0, cm))
        if self.cached_map:
            out["token_map.token_to_req"] = cm._token_to_req_indices_cache[:N].cpu().numpy().astype(np.int32)
        self._swa_outputs(cm, swa_md, out, N, ndt)  # the SWA fields and the split, as on V4.1
        if not self.dspark_swa and not step.causal:
            for k in [k for k in out if k.startswith("swa.")]:
                del out[k]
        if not self.swa_clears_rows and "swa.swa_lens" in out:
            # <= 0.27.1 leaves the row of a length-0 token as it was (kept: swa-rows-uncleared)
            out["swa._rows_uncleared"] = np.nonzero(out["swa.swa_lens"].reshape(-1)[:N] == 0)[0]
        active = c128a_width(base.max_seq_len)

        for name, b in (("mla_c4", self.mla[0]), ("mla_c128", self.mla[1])):
            cm = group_cm()
            md = call(name, lambda: b.build(0, cm))
            out[name + ".compressed_slots"] = b.compressed_slot_mapping_buffer[:C].cpu().numpy()
            if name == "mla_c4" and not self.cached_map:
                out["token_map.token_to_req"] = b.req_id_per_token_buffer[:N].cpu().numpy().astype(np.int32)
            if b.compress_ratio == 128:
                g = getattr(md, "c128a_global_decode_topk_indices", None)
                if g is not None:
                    out[name + ".c128a_decode_indices"] = self._c128a_rows(g.reshape(g.shape[0], -1), active)
                    out[name + ".c128a_decode_lens"] = md.c128a_decode_topk_lens.cpu().numpy()
                p = getattr(md, "c128a_prefill_topk_indices", None)
                if p is not None:
                    out[name + ".c128a_prefill_indices"] = self._c128a_rows(p, active)
        for k, b in enumerate(self.compressors):
            cm = group_cm()
            call(MAPPING_GROUPS[3 + k], lambda: b.build(0, cm))
        b = self.indexer[0]
        self._indexer_block_table(step)
        cm = group_cm()
        md = call("indexer_c4", lambda: b.build(0, cm))
        pre = "indexer_c4."
        out[pre + "compressed_slots"] = b.compressed_slot_mapping_buffer[:C].cpu().numpy()
        if md.decode is not None and not self.varlen:
            # The native path (0.20.0-0.27.1): per-request decode lengths, seq_lens [nd, L] (or
            # [ndt, 1] with next_n = 1), the runner's block table handed out (no output to compare);
            # the indexer's own uniform split and its host choices.
            d = md.decode
            out[pre + "seq_out"] = d.seq_lens.reshape(-1).cpu().numpy()
            out[pre + "decode_lens"] = d.decode_lens.reshape(-1).cpu().numpy()
            out[pre + "_host.num_decodes"] = np.array([md.num_decodes], np.int32)
            out[pre + "_host.requires_padding"] = np.array([int(bool(d.requires_padding))], np.int32)
        elif md.decode is not None:
            d = md.decode
            out[pre + "seq_out"] = d.seq_lens.reshape(-1)[:ndt].cpu().numpy()
            out[pre + "bt_out"] = d.block_table[:ndt, :z["bt_width"]].cpu().numpy()
            out[pre + "decode_lens"] = d.decode_lens[:ndt].cpu().numpy()
            if getattr(d, "indices", None) is not None:
                out[pre + "indices"] = d.indices[:ndt].cpu().numpy()
            if getattr(d, "per_req_decode_lens", None) is not None:
                out[pre + "per_req"] = d.per_req_decode_lens[:md.num_decodes].cpu().numpy()
        if md.prefill is not None:
            prefill_chunk_outputs(md.prefill, pre, out)
        return out, launches
