// The one table of the suite's defined regions (kernels/suite/suite.h lists them): for every
// output field of one step, the buffer it lives in, the extent the step defines, and the
// reference cells it must equal. CompareSuite walks it to compare an implementation's buffers;
// ReferenceFields (the step-dump writer) walks it to write the reference arrays. A field that is
// absent in a step (the indexer decode fields with no decode request, the segment fields with no
// prefill, as in vLLM) has no row.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/batch.h"
#include "kernels/suite/impl_registry.h"
#include "kernels/suite/suite.h"

namespace dspark {

struct SuiteRegion {
  std::string builder;  // e.g. "indexer_r1"
  std::string field;    // e.g. "bt_out"
  bool int64_field = false;
  int64_t rows = 0;     // [rows, cols] the defined extent; a 1-D field has cols == 1
  int64_t cols = 1;
  bool matrix = false;  // dumped as [rows, cols] (else [rows])
  // The reference, dense row-major over [rows, cols] (points into the SuiteReference): cells
  // [0, GivenCells()) are stored there; every cell from want_cells on equals `tail` (the
  // per-capacity fields past the step's tokens, -1 slots and 0 lengths, whose reference is not
  // materialized up to the capacity: the cost of a step follows its tokens).
  const int32_t* want32 = nullptr;
  const int64_t* want64 = nullptr;
  int64_t want_cells = -1;  // -1: every cell is stored
  int64_t tail = 0;
  // Where the implementation's buffer of the field is in a SuiteOutputs, and its row stride.
  int32_t* SuiteOutputs::*got32 = nullptr;
  int64_t* SuiteOutputs::*got64 = nullptr;
  int k = -1;            // >= 0: the buffer is got_indexer of SuiteOutputs::indexer[k]
  int32_t* IndexerOutputs::*got_indexer = nullptr;
  int64_t got_stride = 1;  // [elements] between rows of the buffer
  int64_t got_offset = 0;  // [elements] of the region's first cell in the buffer
  // >= 0: rows from here on are padding rows whose columns 1.. form "<field>_padding", classified
  // as padding residue for the old indexer chain (which zeroes only column 0 there).
  int64_t padding_rows_from = -1;
  // A prefill metadata field (SWA prefill_gather_lens, the indexer's prefill chunks): compared
  // only for implementations with ImplTraits::writes_prefill_metadata.
  bool prefill_metadata = false;
  // A field of #57207's FP8 prefill segmentation: compared only for implementations that build
  // it (BuildsPrefillSegments).
  bool prefill_segments = false;
  // Which indexer decode path defines the field (DeepSeek-V4's indexer): kAny, or only the
  // varlen chain / #56562 kernel (the step's split, per-token rows) or only the native path of
  // states (a) and (b) (ImplTraits::native_indexer_decode: the indexer's own uniform split,
  // per-request rows). Both share the field names; an implementation is held to its path's.
  enum class IndexerPath : int8_t { kAny, kPerToken, kNative };
  IndexerPath indexer_path = IndexerPath::kAny;

  int64_t Cells() const { return rows * cols; }
  int64_t GivenCells() const { return want_cells < 0 ? Cells() : std::min(want_cells, Cells()); }
  int64_t Want(int64_t cell) const {
    if (cell >= GivenCells()) return tail;
    return int64_field ? want64[cell] : want32[cell];
  }
};

// Whether an implementation with `traits` defines region `r` under `consts` (its prefill
// metadata, #57207's segments, its indexer path); else the region is neither compared nor
// listed among its outputs.
inline bool RegionApplies(const SuiteRegion& r, const ImplTraits& traits, const ModelConsts& consts) {
  if (r.prefill_metadata && !traits.writes_prefill_metadata) return false;
  if (r.prefill_segments && !BuildsPrefillSegments(traits, consts)) return false;
  if (r.indexer_path == SuiteRegion::IndexerPath::kAny) return true;
  return (r.indexer_path == SuiteRegion::IndexerPath::kNative) == traits.native_indexer_decode;
}

// Every field's region of the step `in` (layout: the persistent buffers' geometry), pointing
// into `ref` (which must outlive the result).
std::vector<SuiteRegion> SuiteRegions(const SuiteReference& ref, const BatchInputs& in, const SuiteLayout& layout,
                                      const ModelConsts& consts);

// DeepSeek-V4's references past SWA (ModelConsts::model kV4): its compressed slots, C128A and
// its ratio-4 indexer, into `r` (kernels/suite/suite_reference_v4.cc). ComputeSuiteReference
// calls it after the fields the two models share.
void FillSuiteReferenceV4(const BatchInputs& in, const SuiteLayout& layout, const ModelConsts& consts,
                          SuiteReference* r);

}  // namespace dspark
