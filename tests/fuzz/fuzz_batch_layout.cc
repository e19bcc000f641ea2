// libFuzzer main of the batch_layout target (tests/fuzz/layout_check.h); built with -DDSPARK_FUZZ=ON.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return dspark::fuzz::FuzzBatchLayout(data, size);
}
