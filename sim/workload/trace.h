// Workload traces: the request list a run replays, and the parsers of the supported formats
// (workloads/TRACE_FORMATS.md describes each one).
//
// Every bad row is an absl::Status naming file:line:column, the field and what was expected.
// Nothing is dropped silently: by default the first bad row stops the load; with
// skip_bad_rows the row is skipped, counted and a few examples are kept for the report.
// Rows must come in arrival order; a row before its predecessor is a bad row. File-level
// faults (empty file, no data row, wrong header, UTF-16 or gzip data, bare CR line ends, no
// request left) always stop.
#pragma once

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "sim/workload/input_file.h"

namespace dspark::sim {

// Longest per-position acceptance profile a trace may carry (K of the simulator is <= this).
inline constexpr int kMaxAcceptanceProfile = 16;
// Longest prompt or output a trace row may give; larger values are taken as corrupt input.
inline constexpr int32_t kMaxTraceTokens = 1 << 24;
// [s] Arrival times must stay below this: a double resolves 2^-20 s (< 1 us) up to 2^33 s
// (272 years); at 1e18 s, a TTFT or TPOT of milliseconds would round to 0.
inline constexpr double kMaxArrivalS = 8589934592.0;  // 2^33

struct RequestSpec {
  int64_t id = 0;            // unique within a workload; the tie-breaker after arrival time
  double arrival_s = 0.0;    // [s] since the earliest request of the trace (or generator start)
  int32_t prompt_len = 0;    // [tokens] >= 1
  int32_t output_len = 0;    // [tokens] >= 1
  // Optional [n <= kMaxAcceptanceProfile] conditional acceptance probability of draft position
  // k given positions < k were accepted; positions past n reuse the last value. Empty: the
  // run's acceptance model decides.
  std::vector<double> acceptance;
};

// kBurstGptLengths: a BurstGPT CSV read as vLLM's benchmark reads it (BurstGPTDataset in
// vllm/benchmarks/datasets.py): only rows of Model "GPT-4" with Response tokens > 0, lengths
// only; the arrivals come from --request-rate (never auto-detected: --trace-format).
enum class TraceFormat { kAuto, kAzure, kVidur, kBurstGpt, kMooncake, kJsonl, kBurstGptLengths };

absl::string_view TraceFormatName(TraceFormat format);
// Accepts auto, azure, vidur, burstgpt, mooncake, jsonl.
absl::StatusOr<TraceFormat> ParseTraceFormat(absl::string_view name);

// What a row with prompt + output above max_model_len gets (--over-length).
enum class OverLength {
  kError,  // a bad row: stops the load, or is skipped under skip_bad_rows (vLLM rejects it)
  kSkip,   // skipped and counted, whatever skip_bad_rows says
  kClip,   // kept, to be cut to max_model_len by the workload (Vidur clips its traces)
};
absl::StatusOr<OverLength> ParseOverLength(absl::string_view name);
absl::string_view OverLengthName(OverLength policy);

struct TraceOptions {
  TraceFormat format = TraceFormat::kAuto;
  bool skip_bad_rows = false;
  // [tokens] a request row with prompt + output above this is handled by `over_length`;
  // 0: no limit.
  int32_t max_model_len = 0;
  OverLength over_length = OverLength::kError;
  ReadLimits read_limits = TraceReadLimits();  // LoadTrace: file size, line length, timeout
  // Stop after this many requests (0: read every row): the rows after them are not parsed nor
  // checked, so memory follows the requests kept (run --num-requests). Rows arriving at the
  // same time as the last one kept are still read (equal times are ordered by id).
  int64_t max_requests = 0;
  // False: the rows are parsed and checked, but only counted and measured (Trace::
  // longest_request), not kept: a scan of the whole file in the memory of its text.
  bool keep_requests = true;
};

struct Trace {
  TraceFormat format = TraceFormat::kAuto;  // the detected (or given) format
  std::string source;                       // file name used in messages
  std::vector<RequestSpec> requests;        // sorted by (arrival_s, id)
  int64_t data_rows = 0;        // non-empty rows after the header
  int64_t skipped_rows = 0;     // bad rows skipped under skip_bad_rows
  std::vector<std::string> skipped_examples;  // messages of the first few skipped rows
  int64_t failed_requests = 0;  // BurstGPT rows with 0 response tokens: failed requests in
                                // the original log, excluded from the workload
  // False for a length-only trace (a Vidur CSV without arrived_at): every arrival is 0 and
  // the run takes them from --request-rate and --burstiness.
  bool has_arrivals = true;
  int64_t other_models_excluded = 0;  // burstgpt-lengths: rows of a Model other than GPT-4
  bool has_hash_ids = false;  // Mooncake rows with hash_ids (prefix-cache blocks, not modelled)
  int64_t longest_request = 0;  // [tokens] the longest prompt + output accepted
  int64_t accepted_requests = 0;  // requests accepted (kept or not: keep_requests)
  bool read_whole_file = true;  // false: stopped at TraceOptions::max_requests (data_rows: those read)
};

// Reads and parses `path`.
absl::StatusOr<Trace> LoadTrace(const std::string& path, const TraceOptions& options);

// Parses `text` (the whole file); `source` names it in messages.
absl::StatusOr<Trace> ParseTrace(absl::string_view text, absl::string_view source,
                                 const TraceOptions& options);

// Writes `requests` in the project's own JSONL format (one object per line).
std::string ToJsonl(const std::vector<RequestSpec>& requests);

}  // namespace dspark::sim
