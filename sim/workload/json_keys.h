// JSON inputs (a calibration, a STEP.json) with a key given twice in one object are refused, as
// the trace parser refuses them: nlohmann-json (like most parsers) keeps the last silently, and
// other tools keep the first, so the file would mean different things to different readers.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

// OK when every object in the JSON document `text` (already known to parse) has each key once;
// otherwise InvalidArgument "<path>:<line>: <key path>: expected each key once per object, got
// it twice", the key path naming the objects it is in ("metadata.fused.gpu_us", "[]" for an
// array element), the line that of the second occurrence.
absl::Status CheckJsonKeysOnce(absl::string_view text, absl::string_view path);

}  // namespace dspark::sim
