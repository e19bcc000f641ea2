// What a fuzz target does when a promise is broken: it prints what was violated to stderr and
// aborts, so that libFuzzer records the input (tests/fuzz/fuzz_targets.h). Shared by the targets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace dspark::fuzz {

[[noreturn]] inline void Violated(absl::string_view condition, absl::string_view detail) {
  std::fprintf(stderr, "fuzz invariant violated: %.*s\n  %.*s\n",
               static_cast<int>(condition.size()), condition.data(),
               static_cast<int>(detail.size()), detail.data());
  std::fflush(stderr);
  std::abort();
}

#define FUZZ_REQUIRE(cond, ...) \
  do {                          \
    if (!(cond)) Violated(#cond, absl::StrCat(__VA_ARGS__)); \
  } while (0)

// Result files are JSON, written with nlohmann-json, which throws on text that is not UTF-8.
inline void RequireJsonWritable(const nlohmann::json& value, absl::string_view what) {
  try {
    FUZZ_REQUIRE(!value.dump().empty(), what);
  } catch (const nlohmann::json::exception& e) {
    Violated(absl::StrCat(what, " cannot be written as JSON"), e.what());
  }
}

inline absl::string_view AsText(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace dspark::fuzz
