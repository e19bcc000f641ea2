// A key given twice in one JSON object is refused in every JSON input (calibration, STEP.json),
// with the file, the line of the repeat and the key's path, as the trace parser refuses it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/model/time_model.h"
#include "sim/studies/step_input.h"
#include "sim/workload/json_keys.h"
#include "tests/common/temp_folders.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;

TEST(JsonKeysOnce, ARepeatAtAnyDepthIsNamedWithItsLineAndPath) {
  EXPECT_TRUE(CheckJsonKeysOnce(R"({"a": 1, "b": {"a": 2}, "c": [{"a": 1}, {"a": 2}]})", "f.json").ok());
  EXPECT_EQ(CheckJsonKeysOnce("{\"a\": 1,\n \"a\": 2}", "f.json").message(),
            "f.json:2: a: expected each key once per object, got it twice");
  EXPECT_EQ(CheckJsonKeysOnce("{\"m\": {\"fused\": {\"gpu_us\": 1,\n\n \"gpu_us\" : 3}}}", "c.json").message(),
            "c.json:3: m.fused.gpu_us: expected each key once per object, got it twice");
  EXPECT_EQ(CheckJsonKeysOnce("{\"l\": [{\"x\": 1}, {\"x\": 1, \"x\": 2}]}", "s.json").message(),
            "s.json:1: l[].x: expected each key once per object, got it twice");
  EXPECT_TRUE(absl::IsInvalidArgument(CheckJsonKeysOnce(R"({"a": 1, "a": 1})", "f")));
}

TEST(JsonKeysOnce, CalibrationAndStepFilesRefuseARepeatedKey) {
  const fs::path dir = ::dspark::testing_util::ProcessTempDir("json_keys", "files", /*create=*/true);
  const std::string bundled =
      ::dspark::testing_util::SlurpFile(::dspark::testing_util::SourceRoot() / "workloads" / "calibration_h200.json");
  ASSERT_FALSE(bundled.empty());
  const size_t open = bundled.find('{');
  const fs::path calibration = dir / "calibration.json";
  std::ofstream(calibration) << bundled.substr(0, open + 1) << "\n\"engine\": {},\n" << bundled.substr(open + 1);
  ASSERT_TRUE(LoadCalibration((::dspark::testing_util::SourceRoot() / "workloads" / "calibration_h200.json").string()).ok());
  ASSERT_NE(bundled.find("\"engine\""), std::string::npos) << "the bundled calibration has an engine section";
  auto loaded = LoadCalibration(calibration.string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(std::string(loaded.status().message()).find(calibration.string() + ":"), std::string::npos);
  EXPECT_NE(std::string(loaded.status().message()).find("engine: expected each key once per object, got it twice"),
            std::string::npos)
      << loaded.status();
  const fs::path step = dir / "STEP.json";
  std::ofstream(step) << "{\"seq_lens\": [5],\n \"seq_lens\": [7]}\n";
  auto read = ReadStepFile(step.string());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), step.string() + ":2: seq_lens: expected each key once per object, got it twice");
}

}  // namespace
}  // namespace dspark::sim
