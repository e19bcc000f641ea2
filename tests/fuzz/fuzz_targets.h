// Fuzz entry points: each feeds one input to a parser of untrusted text (traces, the run and
// sweep options, acceptance curves and profiles) and checks what the parser promises, on
// success and on failure. A broken promise prints what was violated to stderr and aborts, so
// that libFuzzer records the input.
//
// The same functions serve the libFuzzer binaries (tests/fuzz/fuzz_<target>.cc, built with
// -DDSPARK_FUZZ=ON and clang) and the corpus replay in tests/fuzz/test_fuzz_corpus.cc (any
// compiler), so every committed input is re-checked in the normal test run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dspark::fuzz {

// Every function returns 0 (libFuzzer's "keep going") or aborts.

// Traces: the input is a whole trace file, parsed with the format forced (or detected, for
// auto) and strictly as well as with skip_bad_rows.
int FuzzTraceAuto(const uint8_t* data, size_t size);
int FuzzTraceAzure(const uint8_t* data, size_t size);
int FuzzTraceVidur(const uint8_t* data, size_t size);
int FuzzTraceBurstGpt(const uint8_t* data, size_t size);
int FuzzTraceMooncake(const uint8_t* data, size_t size);
int FuzzTraceJsonl(const uint8_t* data, size_t size);

// The input is the JSON value of one own-JSONL row's "acceptance" key (newlines become spaces).
int FuzzAcceptanceProfile(const uint8_t* data, size_t size);

// Byte 0 picks K in [-1, 9]; the rest is the text of --acceptance-curve.
int FuzzAcceptanceCurve(const uint8_t* data, size_t size);

// Option inputs for `run` and `sweep`: when a line "%%" is present, the lines before it are
// argv tokens (one per line) and the text after it is the --config file; otherwise the whole
// input is the config file. The config file is written to a per-process temporary file.
int FuzzRunConfig(const uint8_t* data, size_t size);
int FuzzSweepConfig(const uint8_t* data, size_t size);

// The input is decoded into 1-3 batch layouts (tests/fuzz/layout_gen.h); every registered
// implementation runs them in CPU emulation and each difference from the references must be one
// the implementation's traits allow (tests/fuzz/layout_check.h). Defined in layout_check.cc.
int FuzzBatchLayout(const uint8_t* data, size_t size);

struct FuzzTarget {
  const char* name;  // folder under tests/fuzz/corpus/ and tests/fuzz/regressions/
  int (*run)(const uint8_t* data, size_t size);
};

// Every target above, by corpus folder name (fuzz_<name>.cc is its libFuzzer main).
const std::vector<FuzzTarget>& AllFuzzTargets();

}  // namespace dspark::fuzz
