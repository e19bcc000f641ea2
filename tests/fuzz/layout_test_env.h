// The environment knobs of the layout fuzz tests (test_fuzz_layouts.cc, test_fuzz_layouts_gpu.cu).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "absl/strings/numbers.h"

namespace dspark::fuzz {

// The decimal or 0x-hex value of `name`, `fallback` when unset or empty; a test failure otherwise.
inline uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  uint64_t out = 0;
  if (v == nullptr || *v == '\0') return fallback;
  if (absl::SimpleAtoi(v, &out) || absl::SimpleHexAtoi(v, &out)) return out;
  ADD_FAILURE() << name << "=" << v << ": expected a decimal or 0x-hex integer";
  return fallback;
}

}  // namespace dspark::fuzz
