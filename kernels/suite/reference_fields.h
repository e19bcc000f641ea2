// The reference outputs of one step as a flat list of named, typed, shaped arrays, cut to each
// field's defined region: the rows of kernels/suite/regions.h, the table CompareSuite walks too.
// This is what `run --dump-steps` writes and what a replay harness compares a user's kernel
// against, cell by cell.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/batch.h"
#include "kernels/suite/impl_registry.h"
#include "kernels/suite/suite.h"

namespace dspark {

struct ReferenceField {
  std::string name;            // "<builder>.<field>", e.g. "indexer_r1.bt_out"
  std::vector<int64_t> shape;  // the defined region, row-major
  bool int64_field = false;    // int64 (i64 holds the values), else int32 (i32)
  std::vector<int32_t> i32;
  std::vector<int64_t> i64;
};

// Every field of `ref` (computed on `layout`) over its defined region for the step `in`; a field
// the step does not have (SuiteRegions) is not listed.
std::vector<ReferenceField> ReferenceFields(const SuiteReference& ref, const BatchInputs& in,
                                            const SuiteLayout& layout, const ModelConsts& consts);

// An implementation's buffers `got` (host-readable) over the regions it defines under `consts`
// (RegionApplies: its ImplTraits), so that they line up with ReferenceFields cell by cell; the
// prefill metadata fields of an implementation that does not write them are not listed, nor
// #57207's segments of one that does not build them. An implementation on the native indexer
// path (states (a), (b) on DeepSeek-V4) lists that path's indexer fields, under the same names
// with their own shapes.
std::vector<ReferenceField> OutputFields(const SuiteOutputs& got, const SuiteReference& ref, const BatchInputs& in,
                                         const SuiteLayout& layout, const ModelConsts& consts,
                                         const ImplTraits& traits);

}  // namespace dspark
