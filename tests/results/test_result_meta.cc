// The meta block carries the implementation registry, from which the plots take every
// implementation's order, role, colour, hatch and marker.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kernels/suite/impl_registry.h"
#include "sim/results/result_meta.h"

namespace dspark::sim {
namespace {

TEST(ResultMeta, CarriesTheRegistryInItsOrder) {
  const nlohmann::ordered_json meta = ResultMeta({"dspark-sim test", "", 1, {"dspark-sim", "test"}, 7});
  ASSERT_TRUE(meta.contains("impls"));
  const nlohmann::ordered_json& impls = meta["impls"];
  ASSERT_EQ(impls.size(), NumImpls());
  for (size_t i = 0; i < impls.size(); ++i) {
    const Impl impl = AllImpls()[i];
    EXPECT_EQ(impls[i]["name"], std::string(ImplName(impl)));
    EXPECT_EQ(impls[i]["order"], i);
    EXPECT_EQ(impls[i]["aliases"], impl.info().aliases);
    EXPECT_EQ(impls[i]["role"], std::string(ImplRoleName(impl.info().role)));
  }
}

TEST(ResultMeta, EveryImplementationIsDrawnItsOwnWay) {
  const nlohmann::ordered_json impls = ImplRegistryJson();
  std::set<std::string> colors, markers;
  for (const auto& entry : impls) {
    const std::string color = entry["color"];
    ASSERT_EQ(color.size(), 7u) << entry.dump();
    EXPECT_EQ(color[0], '#') << entry.dump();
    EXPECT_TRUE(colors.insert(color).second) << "colour shared: " << entry.dump();
    EXPECT_FALSE(entry["marker"].get<std::string>().empty()) << entry.dump();
    markers.insert(entry["marker"].get<std::string>());
    EXPECT_TRUE(entry["hatch"].is_string()) << entry.dump();
  }
  // The built-ins have a marker each (the palette repeats only past its length).
  EXPECT_EQ(markers.size(), impls.size());
}

TEST(ResultMeta, OneBaselineAndTheSeedsColumnsAreNamedByRole) {
  int baselines = 0, before = 0, after = 0;
  for (const auto& entry : ImplRegistryJson()) {
    baselines += entry["role"] == "baseline";
    before += entry["role"] == "seed-before";
    after += entry["role"] == "seed-after";
    if (entry["role"] == "baseline" || entry["role"] == "seed-before" || entry["role"] == "seed-after") {
      EXPECT_TRUE(entry["vllm_state"].is_string()) << entry.dump();
      EXPECT_TRUE(entry["vllm_release"].is_string()) << entry.dump();
    }
  }
  EXPECT_EQ(baselines, 1);
  EXPECT_EQ(before, 1);
  EXPECT_EQ(after, 1);
  const absl::StatusOr<Impl> baseline = BaselineImpl();
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  EXPECT_EQ(baseline->info().role, ImplRole::kBaseline);
}

}  // namespace
}  // namespace dspark::sim
