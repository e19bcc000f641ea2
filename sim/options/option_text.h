// Checks of the text handed to Boost.Program_options (argv and --config files), made before it
// parses anything:
//  - UTF-8 only, since the options end up in JSON result files (sim/workload/utf8.h);
//  - none of Boost's message placeholders (%canonical_option%, %invalid_line%, %option%,
//    %original_token%, %prefix%, %value%): Boost 1.74 builds an error message by replacing each placeholder until
//    none is left, so an option name or value that contains its own placeholder makes it loop
//    forever (found by fuzzing: a config line "s%original_token%x = 1" hung `run`).
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

// InvalidArgument naming the first bad argument after argv[0].
absl::Status CheckOptionArgs(int argc, char** argv);

// InvalidArgument naming `source`, the line and the column of the first bad text.
absl::Status CheckOptionFile(absl::string_view text, absl::string_view source);

}  // namespace dspark::sim
