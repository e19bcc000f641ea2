// CPU truth for the ratio-2 compressor ring slot mapping, written from docs/design.md section 3, not
// from the kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/batch.h"

namespace dspark::ref {

// [sizes.capacity] int64 ring slot per token; -1 for tokens whose request's first block is the
// null page, and for every entry past the real tokens. `ring_capacity` [slots per request] is
// CompressorRingCapacity(K).
std::vector<int64_t> RingSlots(const BatchSizes& sizes, const DeviceBatch& device, int32_t ring_capacity);

}  // namespace dspark::ref
