// The checks every parse of a fuzzed trace must pass (tests/fuzz/fuzz_targets.h): what
// sim/workload/trace.h and TRACE_FORMATS.md promise of a successful parse and of its errors.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "sim/workload/trace.h"

namespace dspark::fuzz {

// The file name the trace targets give the parser; every message must start with it.
inline constexpr absl::string_view kSource = "fuzz.trace";

// A failed parse: InvalidArgument, "fuzz.trace:LINE:COLUMN: field 'NAME': ..." with LINE a
// non-blank line of the input and COLUMN inside it (or just past its end), or one of the two
// whole-file messages.
void CheckTraceError(const absl::Status& status, absl::string_view text);

// A successful parse of `text` with `options`, and ToJsonl's round trip of its requests.
void CheckTrace(const sim::Trace& t, const sim::TraceOptions& options, absl::string_view text);

// Requests `a` and `b` are equal field by field; `what` names the comparison in the failure.
void RequireSameRequests(const std::vector<sim::RequestSpec>& a, const std::vector<sim::RequestSpec>& b,
                         absl::string_view what);

std::string Describe(const sim::RequestSpec& r);

}  // namespace dspark::fuzz
