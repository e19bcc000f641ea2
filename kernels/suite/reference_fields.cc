#include "kernels/suite/reference_fields.h"

#include <algorithm>

namespace dspark {
namespace {

ReferenceField I32(std::string name, std::vector<int64_t> shape, const std::vector<int32_t>& v, size_t n) {
  ReferenceField f;
  f.name = std::move(name);
  f.shape = std::move(shape);
  f.i32.assign(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
  return f;
}

ReferenceField I64(std::string name, std::vector<int64_t> shape, const std::vector<int64_t>& v, size_t n) {
  ReferenceField f;
  f.name = std::move(name);
  f.shape = std::move(shape);
  f.int64_field = true;
  f.i64.assign(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
  return f;
}

}  // namespace

std::vector<ReferenceField> ReferenceFields(const SuiteReference& ref, const BatchInputs& in,
                                            const ModelConsts& consts) {
  const BatchSizes& z = in.sizes;
  const int64_t N = z.num_tokens, C = z.capacity, W = consts.swa_window;
  const int64_t nd = z.num_decodes, n_d = z.num_decode_tokens, bw = z.bt_width;
  std::vector<ReferenceField> out;
  out.push_back(I32("token_map.token_to_req", {N}, ref.token_to_req, N));
  out.push_back(I32("swa.swa_lens", {N}, ref.swa.lens, N));
  out.push_back(I32("swa.swa_indices", {N, W}, ref.swa.indices, N * W));
  out.push_back(I64("mla_r1.compressed_slots", {C}, ref.mla_r1_slots, C));
  out.push_back(I64("mla_r2.compressed_slots", {C}, ref.mla_r2_slots, C));
  out.push_back(I64("mla_r2.ring_slots", {C}, ref.ring_slots, C));
  for (const char* b : {"indexer_r1", "indexer_r2"}) {
    const std::string p(b);
    out.push_back(I32(p + ".seq_out", {C}, ref.indexer.seq_out, C));
    out.push_back(I32(p + ".bt_out", {n_d, bw}, ref.indexer.bt_rows, n_d * bw));
    out.push_back(I32(p + ".decode_lens", {n_d}, ref.indexer.decode_lens, n_d));
    out.push_back(I32(p + ".indices", {n_d}, ref.indexer.indices, n_d));
    out.push_back(I32(p + ".per_req", {nd}, ref.indexer.per_req, nd));
  }
  const int64_t segs = std::max<int64_t>(0, ref.segments.count);
  out.push_back(I32("prefill_segments.seg_qsl", {segs + 1}, ref.segments.seg_qsl, segs + 1));
  out.push_back(I32("prefill_segments.seg_seq_lens", {segs}, ref.segments.seg_seq_lens, segs));
  out.push_back(I32("prefill_segments.seg_count", {1}, std::vector<int32_t>{ref.segments.count}, 1));
  return out;
}

}  // namespace dspark
