#include <gtest/gtest.h>

#include <limits>

#include "zerodp/plan/activations.h"
#include "zerodp/plan/efficiency.h"

namespace zerodp::plan {
namespace {

TEST(StepTime, OverlapHidesAFractionButNeverMoreThanTheCompute) {
  // 10 s of compute, 20 s of comm (2 TB at 100 GB/s): even full overlap hides only 10 s.
  const StepTime full = step_time(10.0, 2'000'000'000'000, 100e9, 1.0);
  EXPECT_DOUBLE_EQ(full.comm_seconds, 20.0);
  EXPECT_DOUBLE_EQ(full.hidden_seconds, 10.0);
  EXPECT_DOUBLE_EQ(full.exposed_seconds, 10.0);
  EXPECT_DOUBLE_EQ(full.efficiency, 0.5);
  // Short comm, fully hidden: efficiency 1.
  const StepTime hidden = step_time(10.0, 1'000'000'000, 1e9, 1.0);
  EXPECT_DOUBLE_EQ(hidden.exposed_seconds, 0.0);
  EXPECT_DOUBLE_EQ(hidden.efficiency, 1.0);
  // No comm at all (N = 1).
  EXPECT_DOUBLE_EQ(step_time(1.0, 0, 1e9, 0.0).efficiency, 1.0);
}

TEST(StepTime, EfficiencyGrowsWithOverlap) {
  double previous = 0;
  for (double f = 0; f <= 1.0; f += 0.125) {
    const double e = step_time(10.0, 2'060'000'000'000, 300e9, f).efficiency;
    EXPECT_GT(e, previous);
    EXPECT_LE(e, 1.0);
    previous = e;
  }
}

// Found by fuzz/plan_inputs_fuzzer.cc: compute + exposed overflowed to inf, efficiency 0.
TEST(StepTime, EfficiencyNearTheTopOfTheDoubleRange) {
  const StepTime t = step_time(1e308, 100'000'000, 1e-300, 0.0);  // 1e308 s of comm
  // exposed / 1e308 is 1 but for four roundings (the literals 1e-300 and 1e308, the model's
  // division and the test's), each at most eps / 2: 2 eps. efficiency = 1 / (1 + r) with r
  // within 2 eps of 1 is within eps / 2 of 0.5, plus two roundings of eps / 4: under 2 eps.
  const double eps = std::numeric_limits<double>::epsilon();
  EXPECT_NEAR(t.exposed_seconds / 1e308, 1.0, 2 * eps);
  EXPECT_NEAR(t.efficiency, 0.5, 2 * eps);
}

TEST(Activations, KorthikantiPerLayerFormulas) {
  // s = 2048, b = 1, h = 4096, a = 32, L = 1: sbh = 8 Mi.
  const TransformerShape one{1, 4096, 32, 2048, 1};
  const std::uint64_t sbh = 2048ull * 4096;
  // s·b·h·(34 + 5·a·s/h) = sbh·(34 + 5·32·2048/4096) = sbh·114.
  EXPECT_EQ(activation_bytes(one, Checkpointing::none), sbh * 114);
  EXPECT_EQ(activation_bytes(one, Checkpointing::selective), sbh * 34);
  EXPECT_EQ(activation_bytes(one, Checkpointing::full), sbh * 2);
  // Linear in the number of layers.
  const TransformerShape many{24, 4096, 32, 2048, 1};
  EXPECT_EQ(activation_bytes(many, Checkpointing::none), 24 * sbh * 114);
  // 5·a·s/h need not be whole: h = 3 heads = 3, s = 2: 34·2·1·3 + 5·3·4·1 = 264.
  EXPECT_EQ(activation_bytes(TransformerShape{1, 3, 3, 2, 1}, Checkpointing::none), 264u);
}

TEST(Activations, OverflowIsReportedNotWrapped) {
  const TransformerShape huge{1'000'000, 1'000'000, 1000, 1'000'000, 1000};
  EXPECT_FALSE(activation_bytes(huge, Checkpointing::none));
  EXPECT_FALSE(activation_bytes(huge, Checkpointing::full));
}

}  // namespace
}  // namespace zerodp::plan
