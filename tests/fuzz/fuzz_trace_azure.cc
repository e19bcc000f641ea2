// libFuzzer main of the trace_azure target (tests/fuzz/fuzz_targets.h); built with -DDSPARK_FUZZ=ON.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return dspark::fuzz::FuzzTraceAzure(data, size);
}
