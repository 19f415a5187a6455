// Every number of the seed's worked examples 1, 3, 4, 5, 6, 7, 8 and of its self-test, at the
// seed's precision (the seed rounds GB to 0.1 or 0.01, TB to 0.01, percentages to 0.1): each
// quoted figure is checked to half a unit of its last digit, the rounding of the quote, except
// where the seed's own arithmetic is coarser (2.06 TB, truncated from 2.0672; 78.4 %, from the
// rounded comm time), checked to one unit. The planner's integers are checked exactly.
#include <gtest/gtest.h>

#include "zerodp/plan/comm.h"
#include "zerodp/plan/efficiency.h"
#include "zerodp/plan/feasibility.h"
#include "zerodp/plan/memory.h"
#include "zerodp/report/notes.h"
#include "zerodp/report/report.h"

namespace zerodp::plan {
namespace {

constexpr double kGB = 1e9, kTB = 1e12;
const BytesPerParam kSeedAdam{};  // the seed's mixed-precision Adam: 2 + 2 + 12

double gb(std::uint64_t bytes) {
  return static_cast<double>(bytes) / kGB;
}
double tb(std::uint64_t bytes) {
  return static_cast<double>(bytes) / kTB;
}
std::uint64_t M(Stage s, std::uint64_t params, int n) {
  return model_state_bytes(params, n, s, kSeedAdam);
}

TEST(SeedExample1, BaselineVsEveryStageAtPhi1e9N8) {
  const std::uint64_t phi = 1'000'000'000;
  EXPECT_EQ(M(Stage::dp, phi, 8), 16'000'000'000u);    // 16 GB
  EXPECT_EQ(M(Stage::zero1, phi, 8), 5'500'000'000u);  // 5.5 GB
  EXPECT_EQ(M(Stage::zero2, phi, 8), 3'750'000'000u);  // 3.75 GB
  EXPECT_EQ(M(Stage::zero3, phi, 8), 2'000'000'000u);  // 2 GB
}

TEST(SeedExample3, FloorsAsNGrowsWithoutBound) {
  const std::uint64_t phi = 1'000'000'000;
  EXPECT_EQ(floor_bytes(phi, Stage::zero1, kSeedAdam), 4'000'000'000u);  // 4 GB
  EXPECT_EQ(floor_bytes(phi, Stage::zero2, kSeedAdam), 2'000'000'000u);  // 2 GB
  EXPECT_EQ(floor_bytes(phi, Stage::zero3, kSeedAdam), 0u);              // 0 GB
  EXPECT_EQ(floor_bytes(phi, Stage::dp, kSeedAdam), 16'000'000'000u);
}

TEST(SeedExample4, TinyModelActivationsDominate) {
  report::PlanInputs in;
  in.params = 50'000'000;
  in.gpus = 8;
  in.activation_bytes = 12'000'000'000;
  in.activations_given = true;
  const report::PlanReport r = report::make_plan(in);
  EXPECT_EQ(*r.stages[0].model_state_bytes, 800'000'000u);  // 0.8 GB
  EXPECT_EQ(*r.stages[0].total_bytes, 12'800'000'000u);     // 12.8 GB
  EXPECT_EQ(*r.stages[3].model_state_bytes, 100'000'000u);  // 0.1 GB
  EXPECT_EQ(*r.stages[3].total_bytes, 12'100'000'000u);     // 12.1 GB
  EXPECT_NEAR(*r.stages[3].savings_vs_dp, 0.055, 0.0005);   // ≈ 5.5 %
  EXPECT_DOUBLE_EQ(*r.stages[3].savings_vs_dp, 0.7 / 12.8);
  EXPECT_TRUE(*r.activations_dominate);
  ASSERT_FALSE(report::plan_notes(r).empty());
  EXPECT_NE(report::plan_notes(r)[0].find("saves only 5.5 %"), std::string::npos)
      << report::plan_notes(r)[0];
}

TEST(SeedExample5, Gpt3NeedsFortySevenGpusUnderZero3) {
  const std::uint64_t phi = 175'000'000'000;
  const std::uint64_t budget = 60'000'000'000;  // 80 GB − 20 GB of activations
  EXPECT_EQ(16 * phi, 2'800'000'000'000u);      // 2800 GB of state
  EXPECT_EQ(min_gpus(phi, Stage::zero3, kSeedAdam, budget), 47u);
  EXPECT_NEAR(gb(M(Stage::zero3, phi, 47)), 59.6, 0.05);  // ≤ 60 ✓
  EXPECT_NEAR(gb(M(Stage::zero3, phi, 46)), 60.9, 0.05);  // > 60 ✗
  EXPECT_TRUE(fits(phi, 47, Stage::zero3, kSeedAdam, budget));
  EXPECT_FALSE(fits(phi, 46, Stage::zero3, kSeedAdam, budget));
  EXPECT_EQ(M(Stage::zero3, phi, 64), 43'750'000'000u);  // the parent's 43.75 GB at N = 64
  // The floors of DP, ZeRO-1, ZeRO-2 (2800, 700, 350 GB) exceed 60 GB: no N at all.
  EXPECT_FALSE(min_gpus(phi, Stage::dp, kSeedAdam, budget));
  EXPECT_FALSE(min_gpus(phi, Stage::zero1, kSeedAdam, budget));
  EXPECT_FALSE(min_gpus(phi, Stage::zero2, kSeedAdam, budget));
  // In practice one rounds to a node: 48 with nodes of 8, 64 with nodes of 64.
  EXPECT_EQ(min_gpus(phi, Stage::zero3, kSeedAdam, budget, 8), 48u);
  EXPECT_EQ(min_gpus(phi, Stage::zero3, kSeedAdam, budget, 64), 64u);
}

TEST(SeedExample6, CommunicationAndTheThreeTimesRule) {
  const std::uint64_t phi = 175'000'000'000;
  const std::uint64_t dp = seed_step_bytes(Stage::dp, phi, kSeedAdam, 64);
  const std::uint64_t z3 = seed_step_bytes(Stage::zero3, phi, kSeedAdam, 64);
  EXPECT_EQ(dp, 344'531'250'000u);  // 3.445e11 bytes exactly: 350e9 · 63 / 64
  EXPECT_NEAR(tb(dp), 0.34, 0.005);
  EXPECT_NEAR(tb(z3), 1.03, 0.005);
  EXPECT_EQ(z3, 3 * dp);  // ratio 3 exactly
  // Both directions: the parent's 2.06 TB.
  EXPECT_NEAR(tb(seed_step_bytes(Stage::zero3, phi, kSeedAdam, 64, Directions::both)), 2.06, 0.01);
  // The ring convention: DP all-reduce sends 4Φ(N−1)/N, ZeRO-3 6Φ(N−1)/N, ratio 1.5.
  EXPECT_EQ(ring_step_bytes(Stage::dp, phi, kSeedAdam, 64), 2 * dp);
  EXPECT_EQ(ring_step_bytes(Stage::zero3, phi, kSeedAdam, 64), z3);
  EXPECT_EQ(2 * ring_step_bytes(Stage::zero3, phi, kSeedAdam, 64),
            3 * ring_step_bytes(Stage::dp, phi, kSeedAdam, 64));
}

TEST(SeedExample7, EfficiencyWithoutAndWithOverlap) {
  const std::uint64_t volume = 2'060'000'000'000;  // 2.06 TB per step
  const StepTime none = step_time(10.0, volume, 300e9, 0.0);
  EXPECT_NEAR(none.comm_seconds, 6.87, 0.005);
  EXPECT_NEAR(none.compute_seconds + none.exposed_seconds, 16.87, 0.005);
  EXPECT_NEAR(none.efficiency, 0.593, 0.0005);  // 59.3 %
  const StepTime overlapped = step_time(10.0, volume, 300e9, 0.6);
  EXPECT_NEAR(overlapped.hidden_seconds, 4.12, 0.005);
  EXPECT_NEAR(overlapped.exposed_seconds, 2.75, 0.005);
  // Exactly, 10 / (10 + 0.4 · 2060/300) = 78.45 %. The seed writes 78.4 % because it rounds
  // the comm time to 6.87 s first; from that rounded time the formula gives its figure.
  EXPECT_NEAR(overlapped.efficiency, 0.784, 0.001);
  EXPECT_NEAR(step_time(10.0, 6'870'000'000'000, 1e12, 0.6).efficiency, 0.784, 0.0005);
  EXPECT_LT(none.efficiency, overlapped.efficiency);
}

TEST(SeedExample8, NoStageFitsAtFourGpus) {
  report::PlanInputs in;
  in.params = 10'000'000'000;
  in.gpus = 4;
  in.gpu_memory = 24'000'000'000;
  in.activation_bytes = 6'000'000'000;
  in.activations_given = true;
  const report::PlanReport r = report::make_plan(in);
  EXPECT_EQ(*r.budget, 18'000'000'000u);
  const std::uint64_t expected[] = {160'000'000'000, 70'000'000'000, 55'000'000'000,
                                    40'000'000'000};
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(*r.stages[s].model_state_bytes, expected[s]) << s;
    EXPECT_FALSE(*r.stages[s].fits) << s;
  }
  EXPECT_FALSE(r.cheapest_fitting_stage);
  EXPECT_FALSE(r.stages[0].min_gpus);
  EXPECT_FALSE(r.stages[1].min_gpus);  // floor 40 GB > 18
  EXPECT_FALSE(r.stages[2].min_gpus);  // floor 20 GB > 18
  EXPECT_EQ(*r.stages[3].min_gpus, 9u);
  EXPECT_NEAR(gb(M(Stage::zero3, 10'000'000'000, 9)), 17.8, 0.05);  // ≤ 18 ✓
  EXPECT_EQ(M(Stage::zero3, 10'000'000'000, 8), 20'000'000'000u);   // 20 > 18 ✗
  EXPECT_NE(report::plan_notes(r)[0].find("No stage fits at N = 4"), std::string::npos);
}

TEST(SeedSelfTest, AnswersOfTheRecall) {
  const std::uint64_t phi = 1'000'000'000;
  // At N = 1 ZeRO-3 saves nothing: every scheme holds 16Φ.
  for (Stage s : kStages) EXPECT_EQ(M(s, phi, 1), 16 * phi);
  // ZeRO-1's floor is 4Φ: params and grads stay replicated.
  EXPECT_EQ(floor_bytes(phi, Stage::zero1, kSeedAdam), 4 * phi);
  // ZeRO-3 costs exactly 3× DP's communication, whatever N and Φ (seed convention).
  for (int n : {2, 8, 64, 1000}) {
    for (std::uint64_t p : {1'000'000'000ull, 175'000'000'000ull}) {
      EXPECT_EQ(seed_step_bytes(Stage::zero3, p, kSeedAdam, n),
                3 * seed_step_bytes(Stage::dp, p, kSeedAdam, n));
    }
  }
  // ZeRO is a bad choice when activations dominate (example 4 above).
}

}  // namespace
}  // namespace zerodp::plan
