// UTF-8 checks for text that ends up in JSON result files: nlohmann-json refuses to write a
// string that is not UTF-8 (it throws type_error 316), so user text (argv, config files, quoted
// trace fields in error messages) is checked where it enters or escaped where it is quoted.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

// Byte offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or npos when `text` is UTF-8.
size_t FirstInvalidUtf8(absl::string_view text);

// `text` with every byte outside a well-formed UTF-8 sequence written as \xHH.
std::string EscapeInvalidUtf8(absl::string_view text);

// InvalidArgument when an argument after argv[0] is not UTF-8: "argument N ('...'): expected
// UTF-8 text, got byte 0xHH at offset K" (the argument quoted with EscapeInvalidUtf8).
absl::Status CheckArgsAreUtf8(int argc, char** argv);

// InvalidArgument naming `source`, the line and the byte column of the first non-UTF-8 byte.
absl::Status CheckTextIsUtf8(absl::string_view text, absl::string_view source);

}  // namespace dspark::sim
