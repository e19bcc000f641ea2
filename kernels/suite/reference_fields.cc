#include "kernels/suite/reference_fields.h"

#include "kernels/suite/regions.h"

namespace dspark {
namespace {

// A field's name, shape and type from its region (the cells are the caller's).
ReferenceField FieldOf(const SuiteRegion& r) {
  ReferenceField f;
  f.name = r.builder + "." + r.field;
  f.shape = r.matrix ? std::vector<int64_t>{r.rows, r.cols} : std::vector<int64_t>{r.rows};
  f.int64_field = r.int64_field;
  return f;
}

}  // namespace

std::vector<ReferenceField> ReferenceFields(const SuiteReference& ref, const BatchInputs& in,
                                            const SuiteLayout& layout, const ModelConsts& consts) {
  std::vector<ReferenceField> out;
  for (const SuiteRegion& r : SuiteRegions(ref, in, layout, consts)) {
    // One reference per field name: the per-token indexer path's (the native path of states (a)
    // and (b) shares the names; their own fields are in their outputs, OutputFields).
    if (r.indexer_path == SuiteRegion::IndexerPath::kNative) continue;
    ReferenceField f = FieldOf(r);
    if (r.int64_field) {
      f.i64.assign(r.want64, r.want64 + r.GivenCells());
      f.i64.resize(static_cast<size_t>(r.Cells()), r.tail);
    } else {
      f.i32.assign(r.want32, r.want32 + r.GivenCells());
      f.i32.resize(static_cast<size_t>(r.Cells()), static_cast<int32_t>(r.tail));
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<ReferenceField> OutputFields(const SuiteOutputs& got, const SuiteReference& ref, const BatchInputs& in,
                                         const SuiteLayout& layout, const ModelConsts& consts,
                                         const ImplTraits& traits) {
  std::vector<ReferenceField> out;
  for (const SuiteRegion& r : SuiteRegions(ref, in, layout, consts)) {
    if (!RegionApplies(r, traits, consts)) continue;
    ReferenceField f = FieldOf(r);
    const int64_t* g64 = r.int64_field ? got.*(r.got64) : nullptr;
    const int32_t* g32 = r.int64_field ? nullptr : r.k >= 0 ? got.indexer[r.k].*(r.got_indexer) : got.*(r.got32);
    for (int64_t row = 0; row < r.rows; ++row)
      for (int64_t col = 0; col < r.cols; ++col) {
        const int64_t at = r.got_offset + row * r.got_stride + col;
        if (r.int64_field)
          f.i64.push_back(g64[at]);
        else
          f.i32.push_back(g32[at]);
      }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace dspark
