#include "kernels/reference/token_map.h"

namespace dspark::ref {

std::vector<int32_t> TokenToReq(const int32_t* qsl, int32_t num_reqs, int32_t num_tokens) {
  std::vector<int32_t> out(num_tokens, 0);
  // repeat_interleave(arange(R), diff(qsl)): request r owns tokens [qsl[r], qsl[r+1]).
  for (int32_t r = 0; r < num_reqs; ++r)
    for (int32_t t = qsl[r]; t < qsl[r + 1] && t < num_tokens; ++t) out[t] = r;
  return out;
}

}  // namespace dspark::ref
