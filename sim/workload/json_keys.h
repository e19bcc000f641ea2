// JSON inputs (a calibration, a STEP.json) with a key given twice in one object are refused, as
// the trace parser refuses them: nlohmann-json (like most parsers) keeps the last silently, and
// other tools keep the first, so the file would mean different things to different readers.
#pragma once

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

// OK when every object in the JSON document `text` (already known to parse) has each key once;
// otherwise InvalidArgument "<path>:<line>: <key path>: expected each key once per object, got
// it twice", the key path naming the objects it is in ("metadata.fused.gpu_us", "[]" for an
// array element), the line that of the second occurrence.
absl::Status CheckJsonKeysOnce(absl::string_view text, absl::string_view path);

// Where each value of a JSON document is, for error messages: nlohmann-json's values carry no
// position, so the document is walked once more with a reader that counts the bytes consumed.
// A value is named by its key path, keys joined with '.' and array elements as "[i]"
// ("metadata.fused.gpu_us.decode", "block_table[2][0]"); a value inside an object is at the line
// of its key. The last occurrence wins for a repeated key (CheckJsonKeysOnce refuses those).
class JsonLines {
 public:
  // An empty index (every LineOf is 0) when `text` is not valid JSON.
  static JsonLines Of(absl::string_view text);
  // The 1-based line, or 0 when the path is not in the document.
  int64_t LineOf(absl::string_view key_path) const;
  // "<file>:<line>" for the key path, or "<file>" when its line is unknown.
  std::string Where(absl::string_view file, absl::string_view key_path) const;

 private:
  std::map<std::string, int64_t, std::less<>> lines_;
};

}  // namespace dspark::sim
