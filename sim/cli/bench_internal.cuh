// The parts of `dspark-sim bench` (sim/cli/cmd_bench.cuh): the metadata table (bench_metadata.cu),
// the TPOT table (bench_tpot.cu), the full run and the assembly of the outputs (bench_run.cu).
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "sim/cli/cmd_bench.cuh"
#include "sim/exec/gpu_timing.cuh"
#include "sim/model/time_model.h"
#include "sim/studies/metadata_bench.cuh"

namespace dspark::sim::bench_internal {

using ojson = nlohmann::ordered_json;

// `v` with `digits` decimals, for the markdown tables.
std::string Md(double v, int digits = 2);
std::string ImplKeyStr(Impl impl);
// The head and rule lines of bench's markdown tables: "| first |", then each implementation's
// columns(impl) and the `after` columns, right-aligned ("|---|---:|...").
std::string ImplTableHead(absl::string_view first, const std::vector<Impl>& impls,
                          const std::function<std::vector<std::string>(Impl)>& columns,
                          const std::vector<std::string>& after = {});
// "# meta: {json}", the header of `columns`, then one CSV line per row of `rows`.
std::string Csv(const ojson& meta, const ojson& rows, const std::vector<std::string>& columns);
// The TPOT loop's time model: `calibration`, else the bundled file, else the built-in defaults;
// *source says which, *status any error loading it (then the defaults are used).
TimeModelParams LoadTimeParams(const std::string& calibration, std::string* source, absl::Status* status);
double MedianOf(std::vector<double> v);

// ---- (a) metadata table (bench_metadata.cu)

struct MetadataSection {
  std::vector<MetadataRow> rows;
  std::vector<std::pair<std::string, timing::Floors>> floors;  // per case
  std::map<std::string, timing::SampleStats> cupti_floors;      // per case, the CUPTI method's
  std::string cupti_status = "ok";                              // why the CUPTI method is missing
  double flush_bytes = 0;
};

absl::StatusOr<MetadataSection> RunMetadata(const BenchConfig& cfg, std::FILE* progress);
void MetadataMarkdown(const BenchConfig& cfg, const MetadataSection& m, std::string* md);
// The targets of docs/design.md s.8 and of the seed comparison, graph method, same run: met or
// missed (never fatal).
ojson Targets(const MetadataSection& m, std::string* md);

// ---- (b) TPOT table (bench_tpot.cu)

// `metadata_rows`: bench.json's "metadata" of this run (empty without the section); the table's
// composition takes its graph-method µs in place of the calibration's (sim/studies/tpot_loop_model.h).
absl::StatusOr<ojson> RunTpot(const BenchConfig& cfg, const ojson& metadata_rows, std::string* md, std::FILE* progress);

// ---- (c) full run (bench_run.cu)

absl::StatusOr<ojson> RunFull(const BenchConfig& cfg, std::string* md, std::vector<std::string>* bugs,
                              std::vector<std::string>* warnings, std::FILE* progress);

}  // namespace dspark::sim::bench_internal
