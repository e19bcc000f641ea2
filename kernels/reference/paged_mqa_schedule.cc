#include "kernels/reference/paged_mqa_schedule.h"

namespace dspark::ref {

std::vector<int32_t> PagedMqaSchedule(const std::vector<int32_t>& context_lens, const std::vector<int32_t>& indices,
                                      int32_t num_sms, int32_t split_kv) {
  struct Atom {
    int64_t first_token, first_segment, segments;
  };
  const int64_t n = static_cast<int64_t>(context_lens.size());
  std::vector<Atom> atoms;
  int64_t segment = 0;
  for (int64_t t = 0; t < n;) {
    const int64_t last = (t + 1 < n && indices[t] == indices[t + 1]) ? t + 1 : t;
    const int64_t len = static_cast<uint32_t>(context_lens[last]);
    const int64_t segs = (len + split_kv - 1) / split_kv;
    atoms.push_back({t, segment, segs});
    segment += segs;
    t = last + 1;
  }
  const int64_t total = segment;
  std::vector<int32_t> out;
  for (int64_t sm = 0; sm <= num_sms; ++sm) {
    // Every SM gets total / num_sms segments; the last total % num_sms SMs get one more.
    const int64_t extra_from = num_sms - total % num_sms;
    const int64_t start = sm * (total / num_sms) + (sm > extra_from ? sm - extra_from : 0);
    // The atom that holds segment `start`: the last with first_segment <= start and a segment
    // past it. Past every atom: the token count, and the offset from the last atom's start.
    int64_t token = n, offset = start;
    for (const Atom& a : atoms) {
      if (start < a.first_segment + a.segments) {
        token = a.first_token;
        offset = start - a.first_segment;
        break;
      }
      offset = start - (a.first_segment + a.segments);
    }
    out.push_back(static_cast<int32_t>(token));
    out.push_back(static_cast<int32_t>(offset));
  }
  return out;
}

}  // namespace dspark::ref
