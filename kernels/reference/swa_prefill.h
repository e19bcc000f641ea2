// CPU truth for the SWA builder's prefill gather lengths (DeepseekSparseSWAMetadataBuilder.
// _build_deepseek_v4_metadata's ComputePrefillMetadataKernel, sparse_swa.py, read_file id
// 61399074654), written from the semantics, not from kernels/swa.cuh.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/batch.h"

namespace dspark::ref {

// [R - nd] for prefill request i (request nd + i of the DEVICE view), with q its query length and
// prefix = seq_len - q: the KV tokens its prefill gathers, q + min(prefix, window - 1) (the query
// and the window's part of the prefix; vLLM's kernel clamps no negative prefix). Empty with no
// prefill request, where vLLM builds nothing.
std::vector<int32_t> SwaPrefillGatherLens(const BatchSizes& sizes, const DeviceBatch& device, int32_t window);

}  // namespace dspark::ref
