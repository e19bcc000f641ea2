// What the sweep's files share (sim/studies/sweep*.cc): file names, the meta fields, the row
// order and the JSON/CSV reads and writes. Not part of the sweep's interface (sweep.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sim/studies/sweep.h"

namespace dspark::sim::sweep_internal {

inline constexpr char kLogName[] = "sweep.jsonl";
inline constexpr char kCsvName[] = "sweep.csv";
inline constexpr char kMetaName[] = "sweep_meta.json";
// vLLM's sweep plotter (vllm/benchmarks/sweep/plot.py) reads every **/summary.json under the
// folder it is given as a JSON list of runs: OUT/vllm/summary.json is that list (the "ok" rows,
// which carry vLLM's keys), for `vllm bench sweep plot OUT/vllm`.
inline constexpr char kVllmSummaryName[] = "vllm/summary.json";

// The text of OUT/vllm/summary.json: the "ok" rows of `rows` as one JSON list.
std::string VllmSweepSummary(const std::vector<nlohmann::ordered_json>& rows);
// Writes OUT/vllm/summary.json from `rows` (creating OUT/vllm).
absl::Status WriteVllmSweepSummary(const std::filesystem::path& dir, const std::vector<nlohmann::ordered_json>& rows);

// {"git_sha", "git_dirty"} of the source tree, "unknown"/null when it is not a git checkout.
std::string UtcNow();  // e.g. "2026-12-01T12:00:00Z"

// 0 "ok", 1 "skipped", 2 anything else (a lower rank wins in DedupeRows).
int StatusRank(const nlohmann::ordered_json& row);
// Indices of the rows DedupeRows keeps, in its output order.
std::vector<size_t> DedupeIndices(const std::vector<nlohmann::ordered_json>& rows);
// A planned point's axes, as sweep_meta.json lists them.
nlohmann::ordered_json AxesJson(const SweepPoint& p);

// What the sweep's results are made from, beyond each point's id (which hashes its run config):
// {"digest", "run": the options of every point's run, "traces": [{path, sha1}], "calibration":
// {path, sha1}, "code": {git_sha, git_dirty}}. sweep_meta.json holds it whole, each row its digest.
absl::StatusOr<nlohmann::ordered_json> SweepFingerprint(const SweepConfig& config,
                                                        const std::vector<SweepPoint>& points);
// "" when the digests agree; otherwise what differs, in words ("the trace 'a.csv' (sha1 ...").
std::string FingerprintDifference(const nlohmann::ordered_json& was, const nlohmann::ordered_json& now);

absl::StatusOr<nlohmann::ordered_json> ReadJsonFile(const std::filesystem::path& path);
// sweep.csv in `dir` from the deduplicated rows of its sweep.jsonl.
absl::Status WriteCsvFromLog(const std::filesystem::path& dir);

}  // namespace dspark::sim::sweep_internal
