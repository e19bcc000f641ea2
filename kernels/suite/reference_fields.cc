#include "kernels/suite/reference_fields.h"

#include "kernels/suite/regions.h"

namespace dspark {

std::vector<ReferenceField> ReferenceFields(const SuiteReference& ref, const BatchInputs& in,
                                            const SuiteLayout& layout, const ModelConsts& consts) {
  std::vector<ReferenceField> out;
  for (const SuiteRegion& r : SuiteRegions(ref, in, layout, consts)) {
    ReferenceField f;
    f.name = r.builder + "." + r.field;
    f.shape = r.matrix ? std::vector<int64_t>{r.rows, r.cols} : std::vector<int64_t>{r.rows};
    f.int64_field = r.int64_field;
    if (r.int64_field)
      f.i64.assign(r.want64, r.want64 + r.Cells());
    else
      f.i32.assign(r.want32, r.want32 + r.Cells());
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace dspark
