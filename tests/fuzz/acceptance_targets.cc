// The acceptance targets (tests/fuzz/fuzz_targets.h): a per-request profile inside an own-JSONL
// row, and the text of --acceptance-curve; both then drive the acceptance model as the engine does.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "sim/model/acceptance.h"
#include "sim/workload/rng.h"
#include "sim/workload/trace.h"
#include "tests/fuzz/fuzz_require.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/trace_checks.h"

namespace dspark::fuzz {
namespace {

using sim::RequestSpec;
using sim::Trace;
using sim::TraceFormat;

// Runs the acceptance model on a [k] curve or per-request profile, as the engine does.
void CheckAcceptanceModel(const std::vector<double>& curve, const RequestSpec& spec, int k,
                          uint64_t seed) {
  sim::AcceptanceParams params;
  params.curve = curve;
  params.request_logit_sigma = 0.3;
  params.name = "fuzz";
  const sim::AcceptanceModel model(params, k);
  sim::Rng rng(seed);
  float p[sim::kMaxSpecK];
  float conf[sim::kMaxSpecK];
  model.InitRequest(spec, rng, p);
  for (int i = 0; i < k; ++i) {
    FUZZ_REQUIRE(p[i] >= 0.0f && p[i] <= 1.0f, "p[", i, "] = ", p[i]);
    if (!spec.acceptance.empty()) {
      const size_t from = std::min<size_t>(static_cast<size_t>(i), spec.acceptance.size() - 1);
      FUZZ_REQUIRE(p[i] == static_cast<float>(spec.acceptance[from]),
                   "profile position ", i, " not taken from element ", from);
    }
  }
  const int32_t prefix = sim::AcceptanceModel::DrawAcceptedPrefix(p, k, rng);
  FUZZ_REQUIRE(prefix >= 0 && prefix <= k, prefix);
  const int32_t accepted = model.DrawWithConfidences(p, k, rng, conf);
  FUZZ_REQUIRE(accepted >= 0 && accepted <= k, accepted);
  for (int i = 0; i < k; ++i)
    FUZZ_REQUIRE(conf[i] >= 0.0f && conf[i] <= 1.0f, "conf[", i, "] = ", conf[i]);
  const double length = sim::ExpectedAcceptanceLength(curve.data(), k);
  FUZZ_REQUIRE(length >= 1.0 && length <= 1.0 + k, length);
}

}  // namespace

int FuzzAcceptanceProfile(const uint8_t* data, size_t size) {
  std::string value(AsText(data, size));
  std::replace(value.begin(), value.end(), '\n', ' ');
  std::replace(value.begin(), value.end(), '\r', ' ');
  constexpr absl::string_view kHead = R"({"prompt_len": 1, "output_len": 1, "acceptance": )";
  const std::string line = absl::StrCat(kHead, value, "}");
  const absl::StatusOr<Trace> trace =
      sim::ParseTrace(line, kSource, {TraceFormat::kJsonl, false});
  if (trace.ok()) {
    CheckTrace(*trace, {TraceFormat::kJsonl, false}, line);
    FUZZ_REQUIRE(trace->requests.size() == 1, trace->requests.size());
  } else {
    CheckTraceError(trace.status(), line);
  }

  // When the value is JSON on its own, whether the row is accepted is decided here too. (A
  // leading BOM is skipped by a parse of the value alone but not inside the line.)
  // A NUL byte ends nlohmann-json's input, and the trace parser rejects it.
  if (absl::StartsWith(value, "\xEF\xBB\xBF") || absl::StrContains(value, '\0')) return 0;
  const nlohmann::json alone = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (alone.is_discarded()) return 0;
  std::vector<double> expected;
  bool valid = alone.is_array() && !alone.empty() &&
               alone.size() <= static_cast<size_t>(sim::kMaxAcceptanceProfile);
  for (size_t i = 0; valid && i < alone.size(); ++i) {
    valid = alone[i].is_number() && alone[i].get<double>() >= 0.0 && alone[i].get<double>() <= 1.0;
    if (valid) expected.push_back(alone[i].get<double>());
  }
  if (!valid) {
    FUZZ_REQUIRE(!trace.ok(), "accepted the profile ", alone.dump());
    const std::string at = absl::StrCat(kSource, ":1:", kHead.find("\"acceptance\"") + 1,
                                        ": field 'acceptance': ");
    FUZZ_REQUIRE(absl::StartsWith(trace.status().message(), at), "expected '", at, "...', got '",
                 trace.status().message(), "'");
    return 0;
  }
  FUZZ_REQUIRE(trace.ok(), "rejected the valid profile ", alone.dump(), ": ",
               trace.status().ToString());
  const RequestSpec& spec = trace->requests.front();
  FUZZ_REQUIRE(spec.acceptance == expected, Describe(spec));
  for (int k = 1; k <= sim::kMaxSpecK; ++k) {
    std::vector<double> curve(static_cast<size_t>(k));
    for (int i = 0; i < k; ++i)
      curve[static_cast<size_t>(i)] = expected[std::min<size_t>(static_cast<size_t>(i), expected.size() - 1)];
    CheckAcceptanceModel(curve, spec, k, static_cast<uint64_t>(size));
  }
  return 0;
}

int FuzzAcceptanceCurve(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int k = static_cast<int>(data[0] % 11) - 1;
  const absl::string_view text = AsText(data + 1, size - 1);
  const absl::StatusOr<std::vector<double>> curve = sim::ParseAcceptanceCurve(text, k);
  if (!curve.ok()) {
    const bool k_in_range = k >= 1 && k <= sim::kMaxSpecK;
    FUZZ_REQUIRE(curve.status().code() == (k_in_range ? absl::StatusCode::kInvalidArgument
                                                      : absl::StatusCode::kOutOfRange),
                 "K ", k, ": ", curve.status().ToString());
    FUZZ_REQUIRE(absl::StartsWith(curve.status().message(), "--acceptance-curve: "),
                 curve.status().message());
    return 0;
  }
  const size_t given = static_cast<size_t>(std::count(text.begin(), text.end(), ',')) + 1;
  FUZZ_REQUIRE(k >= 1 && k <= sim::kMaxSpecK && given <= static_cast<size_t>(k) &&
                   curve->size() == static_cast<size_t>(k),
               "K ", k, ", ", given, " values given, ", curve->size(), " returned");
  for (size_t i = 0; i < curve->size(); ++i) {
    FUZZ_REQUIRE((*curve)[i] >= 0.0 && (*curve)[i] <= 1.0, "p[", i, "] = ", (*curve)[i]);
    if (i >= given) FUZZ_REQUIRE((*curve)[i] == (*curve)[given - 1], "p[", i, "] not repeated");
  }
  // Printed with round-trip precision, the curve reads back unchanged.
  std::vector<std::string> printed;
  for (size_t i = 0; i < given; ++i) printed.push_back(absl::StrFormat("%.17g", (*curve)[i]));
  const auto again = sim::ParseAcceptanceCurve(absl::StrJoin(printed, ","), k);
  FUZZ_REQUIRE(again.ok() && *again == *curve, "round trip of ", absl::StrJoin(printed, ","));
  CheckAcceptanceModel(*curve, RequestSpec{}, k, static_cast<uint64_t>(size));
  return 0;
}

}  // namespace dspark::fuzz
