// One step's batch given by hand, for `dspark-sim step`: a STEP.json file (workloads/STEP.md)
// or the same fields as command-line options, checked and turned into the arrays the builder
// suite reads (kernels/suite/cases.h's CaseBatch).
//
// Every field is checked before any kernel sees it, so a wrong array is an error naming the
// file (or option), the field and what was expected, never an out-of-bounds read:
//   query_start_loc [R + 1] from 0, non-decreasing;  seq_lens [R], seq_lens[r] >= query length;
//   block_table R rows (ragged rows are padded with 0, the null page) of block ids that keep
//   every slot id inside int32; each row covers its request's context;
//   num_decodes in [0, R];  num_tokens >= qsl[R];  num_decode_tokens in [qsl[num_decodes],
//   num_tokens];  capacity >= max(num_tokens, R, 1);  slot_mapping [num_tokens] of ids >= -1;
//   host.query_start_loc / host.seq_lens the same checks (the host view's own consistency).
#pragma once

#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "kernels/batch.h"
#include "kernels/suite/cases.h"
#include "nlohmann/json.hpp"
#include "sim/workload/json_keys.h"

namespace dspark::sim {

inline constexpr int kStepInputSchemaVersion = 1;

struct StepInput {
  CaseBatch batch;     // device truth and the host view, sizes filled in
  ModelConsts consts;  // spec_k from the input; the rest are the model's constants
};

// Where the fields came from, for error messages: `origin` is the file path (or "options"),
// and a field named in `from_options` is reported by its option (--seq-lens) instead.
struct StepInputSource {
  std::string origin;
  std::set<std::string> from_options;
  JsonLines lines;  // the file's lines by field (ReadStepFile), for "<file>:<line>: field ..."
};

// The option that sets `field` ("seq_lens" -> "--seq-lens"; "host.seq_lens" -> "--host-seq-lens").
std::string StepFieldOption(const std::string& field);

// Checks and converts one STEP.json object. InvalidArgument or OutOfRange naming the origin,
// the field and what was expected.
absl::StatusOr<StepInput> ParseStepInput(const nlohmann::json& j, const StepInputSource& source);

// The JSON object of `path` (bounded read; a syntax error names the file, line and column).
absl::StatusOr<nlohmann::json> ReadStepFile(const std::string& path, JsonLines* lines = nullptr);

// `input` as a STEP.json object that ParseStepInput reads back to the same arrays.
nlohmann::ordered_json StepInputJson(const StepInput& input);

}  // namespace dspark::sim
