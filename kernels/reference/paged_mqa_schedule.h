// CPU truth for DeepGEMM's paged-MQA-logits scheduler metadata in its varlen form (vLLM's
// indexer decode build ends with get_paged_mqa_logits_metadata(seq_lens, ..., num_sms, indices)),
// written from the semantics, not from kernels/paged_mqa_schedule.cuh.
#pragma once

#include <cstdint>
#include <vector>

namespace dspark::ref {

// Tokens pair from the left into atoms (two adjacent tokens of one request; an atom's length is
// its last token's); each atom has ceil(len / split_kv) segments. The segments are split over
// `num_sms` SMs, the last (total % num_sms) SMs taking one more. Returns 2 * (num_sms + 1)
// values: for SM s (s = num_sms is the end marker) the first token of the atom holding its first
// segment (tokens.size() past the end) and that segment's offset inside the atom.
std::vector<int32_t> PagedMqaSchedule(const std::vector<int32_t>& context_lens, const std::vector<int32_t>& indices,
                                      int32_t num_sms, int32_t split_kv = 256);

}  // namespace dspark::ref
