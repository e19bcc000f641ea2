// The trace targets (tests/fuzz/fuzz_targets.h): each parses the input as a whole trace file in
// one format (or detected), strictly and with skip_bad_rows, and checks both outcomes.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "sim/workload/trace.h"
#include "tests/fuzz/fuzz_require.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/trace_checks.h"

namespace dspark::fuzz {
namespace {

using sim::Trace;
using sim::TraceFormat;
using sim::TraceOptions;

int FuzzTrace(TraceFormat format, const uint8_t* data, size_t size) {
  const absl::string_view text = AsText(data, size);
  const TraceOptions strict_options{format, false};
  const TraceOptions skip_options{format, true};
  const absl::StatusOr<Trace> strict = sim::ParseTrace(text, kSource, strict_options);
  const absl::StatusOr<Trace> skip = sim::ParseTrace(text, kSource, skip_options);
  if (strict.ok()) {
    CheckTrace(*strict, strict_options, text);
    FUZZ_REQUIRE(skip.ok(), "strict parse succeeded, skip_bad_rows failed: ",
                 skip.status().ToString());
    FUZZ_REQUIRE(skip->skipped_rows == 0 && skip->format == strict->format &&
                     skip->data_rows == strict->data_rows &&
                     skip->failed_requests == strict->failed_requests,
                 "skip_bad_rows changed a clean parse");
    RequireSameRequests(strict->requests, skip->requests, "skip_bad_rows on a clean trace");
    // The detected format, forced, reads the file the same way.
    if (format == TraceFormat::kAuto) {
      const TraceOptions forced{strict->format, false};
      const absl::StatusOr<Trace> again = sim::ParseTrace(text, kSource, forced);
      FUZZ_REQUIRE(again.ok(), "detected ", sim::TraceFormatName(strict->format),
                   ", but forcing it fails: ", again.status().ToString());
      RequireSameRequests(strict->requests, again->requests, "forced detected format");
    }
    return 0;
  }
  CheckTraceError(strict.status(), text);
  if (skip.ok()) {
    CheckTrace(*skip, skip_options, text);
    // Rows are parsed independently, so the first skipped row is the one a strict parse stops at.
    FUZZ_REQUIRE(skip->skipped_rows >= 1 && skip->skipped_examples.front() == strict.status().message(),
                 "strict error '", strict.status().message(), "' is not the first skipped row (",
                 skip->skipped_rows, " skipped)");
  } else {
    CheckTraceError(skip.status(), text);
    FUZZ_REQUIRE(skip.status().message() == strict.status().message() ||
                     absl::StrContains(skip.status().message(), "expected every row or no row") ||
                     absl::StrContains(skip.status().message(), "expected at least one request, got none"),
                 "strict: ", strict.status().message(), "; skip: ", skip.status().message());
  }
  return 0;
}

}  // namespace

int FuzzTraceAuto(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kAuto, d, n); }
int FuzzTraceAzure(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kAzure, d, n); }
int FuzzTraceVidur(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kVidur, d, n); }
int FuzzTraceBurstGpt(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kBurstGpt, d, n); }
int FuzzTraceMooncake(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kMooncake, d, n); }
int FuzzTraceJsonl(const uint8_t* d, size_t n) { return FuzzTrace(TraceFormat::kJsonl, d, n); }

}  // namespace dspark::fuzz
