// CPU truth for token_to_req_indices, written from docs/design.md section 3, not from the kernel.
#pragma once

#include <cstdint>
#include <vector>

namespace dspark::ref {

// [num_tokens] request id per token from boundaries `qsl` ([num_reqs + 1]); tokens past the
// last boundary (graph padding) get 0.
std::vector<int32_t> TokenToReq(const int32_t* qsl, int32_t num_reqs, int32_t num_tokens);

}  // namespace dspark::ref
