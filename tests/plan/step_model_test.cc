// The step-time model (plan/step_model.h) and the schedule it times (deepspeed/step_schedule.h):
// what is hidden, what is exposed, and at which link's rate each collective runs.
#include <gtest/gtest.h>

#include <numeric>

#include "zerodp/deepspeed/step_schedule.h"
#include "zerodp/plan/step_model.h"

namespace zerodp::plan {
namespace {

StepCollective collective(StepPhase phase, bool overlapped, std::uint64_t pieces,
                          std::uint64_t intra, std::uint64_t inter = 0) {
  StepCollective c;
  c.name = "c";
  c.phase = phase;
  c.overlapped = overlapped;
  c.pieces = pieces;
  c.intra_bytes = intra;
  c.inter_bytes = inter;
  return c;
}

// Rates and byte counts below are exact in binary (powers of two), so every expected second is
// the double the model computes, and EXPECT_DOUBLE_EQ asks for it within 4 ulps.
constexpr double kRate = 1024.0 * 1024 * 1024;  // 1 GiB/s

TEST(StepModel, ACollectiveNotOverlappedIsExposedWhole) {
  const StepModel m = model_step(
      1.0, 2.0, {collective(StepPhase::after_backward, false, 1, 512u << 20)}, {kRate, kRate});
  EXPECT_DOUBLE_EQ(m.comm_seconds, 0.5);
  EXPECT_DOUBLE_EQ(m.hidden_seconds, 0.0);
  EXPECT_DOUBLE_EQ(m.exposed_seconds, 0.5);
  EXPECT_DOUBLE_EQ(m.step_seconds, 3.5);
  EXPECT_DOUBLE_EQ(m.efficiency, 3.0 / 3.5);
  // Even overlapped, what runs after the backward has no compute beside it.
  const StepModel after = model_step(
      1.0, 2.0, {collective(StepPhase::after_backward, true, 8, 512u << 20)}, {kRate, kRate});
  EXPECT_DOUBLE_EQ(after.exposed_seconds, 0.5);
}

TEST(StepModel, AnOverlappedCollectiveHidesAllButOnePieceWhileItsPhaseHasCompute) {
  // 1 s of gather in 4 layers beside a 2 s forward: 3/4 of it hidden, the first layer's wait
  // exposed.
  const StepModel m =
      model_step(2.0, 4.0, {collective(StepPhase::forward, true, 4, 1u << 30)}, {kRate, kRate});
  EXPECT_DOUBLE_EQ(m.collectives[0].seconds, 1.0);
  EXPECT_DOUBLE_EQ(m.collectives[0].hidden_seconds, 0.75);
  EXPECT_DOUBLE_EQ(m.exposed_seconds, 0.25);
  EXPECT_DOUBLE_EQ(m.step_seconds, 6.25);
}

TEST(StepModel, CollectivesOfOnePhaseShareItsCompute) {
  // Two backward collectives of 1 s each in 4 pieces beside a 1 s backward: the first hides
  // 0.75 s, the second only the 0.25 s left; the forward's compute does not help them.
  const StepModel m = model_step(8.0, 1.0,
                                 {collective(StepPhase::backward, true, 4, 1u << 30),
                                  collective(StepPhase::backward, true, 4, 1u << 30)},
                                 {kRate, kRate});
  EXPECT_DOUBLE_EQ(m.collectives[0].hidden_seconds, 0.75);
  EXPECT_DOUBLE_EQ(m.collectives[1].hidden_seconds, 0.25);
  EXPECT_DOUBLE_EQ(m.hidden_seconds, 1.0);
  EXPECT_DOUBLE_EQ(m.exposed_seconds, 1.0);
  EXPECT_DOUBLE_EQ(m.step_seconds, 10.0);
  const StepTime t = m.step_time();
  EXPECT_DOUBLE_EQ(t.compute_seconds, 9.0);
  EXPECT_DOUBLE_EQ(t.efficiency, 0.9);
}

TEST(StepModel, ARingRunsAtTheSlowestLevelItCrosses) {
  // 3 GiB inside and 1 GiB across: 4 GiB at the slower of 4 GiB/s inside, 1 GiB/s across.
  const LinkRates rates{4 * kRate, kRate};
  const StepModel across = model_step(
      1.0, 1.0, {collective(StepPhase::after_backward, false, 1, 3u << 30, 1u << 30)}, rates);
  EXPECT_DOUBLE_EQ(across.comm_seconds, 4.0);
  // Inside one node only: the inside rate.
  const StepModel inside =
      model_step(1.0, 1.0, {collective(StepPhase::after_backward, false, 1, 4ull << 30)}, rates);
  EXPECT_DOUBLE_EQ(inside.comm_seconds, 1.0);
  // One GPU a node sends only across, and needs no inside rate.
  const StepModel single = model_step(
      1.0, 1.0, {collective(StepPhase::after_backward, false, 1, 0, 2u << 30)}, {0, kRate});
  EXPECT_DOUBLE_EQ(single.comm_seconds, 2.0);
}

TEST(StepSchedule, DeepSpeedOverlapsOnlyAtStageThreeUnlessTold) {
  const deepspeed::Topology t{8, 4};
  const plan::BytesPerParam bpp{2, 2, 12};
  const std::uint64_t phi = 8'000'000'000;
  deepspeed::ScheduleSettings s;
  s.layers = 32;
  const auto dp = deepspeed::step_collectives(Stage::dp, phi, bpp, t, {}, s);
  ASSERT_EQ(dp.size(), 1u);
  EXPECT_EQ(dp[0].name, "gradient all-reduce");
  EXPECT_EQ(dp[0].phase, StepPhase::after_backward);
  const auto z2 = deepspeed::step_collectives(Stage::zero2, phi, bpp, t, {}, s);
  ASSERT_EQ(z2.size(), 2u);
  EXPECT_FALSE(z2[0].overlapped);
  EXPECT_EQ(z2[1].name, "params gather after step");
  EXPECT_EQ(z2[1].phase, StepPhase::after_backward);
  s.overlap_comm = true;
  const auto z2_on = deepspeed::step_collectives(Stage::zero2, phi, bpp, t, {}, s);
  EXPECT_TRUE(z2_on[0].overlapped);
  EXPECT_EQ(z2_on[0].pieces, 16u);  // 8e9 / 5e8 elements a bucket
  EXPECT_FALSE(z2_on[1].overlapped);
  s.overlap_comm.reset();
  const auto z3 = deepspeed::step_collectives(Stage::zero3, phi, bpp, t, {}, s);
  ASSERT_EQ(z3.size(), 3u);
  EXPECT_EQ(z3[0].phase, StepPhase::forward);
  EXPECT_EQ(z3[1].phase, StepPhase::backward);
  EXPECT_EQ(z3[2].phase, StepPhase::backward);
  for (const auto& c : z3) EXPECT_TRUE(c.overlapped);
  EXPECT_EQ(z3[0].pieces, 32u);
  EXPECT_EQ(z3[2].pieces, 16u);
  // FSDP reduce-scatters unit by unit.
  s.framework = deepspeed::Framework::fsdp;
  EXPECT_EQ(deepspeed::step_collectives(Stage::zero3, phi, bpp, t, {}, s)[2].pieces, 32u);
}

TEST(StepSchedule, ItsBytesAreTheLevelsBytes) {
  const deepspeed::Topology t{8, 4};
  const plan::BytesPerParam bpp{2, 2, 12};
  ZeroPlusPlus zpp;
  zpp.qwz = zpp.hpz = zpp.qgz = true;
  zpp.hpz_size = 8;
  for (const ZeroPlusPlus& z : {ZeroPlusPlus{}, zpp}) {
    for (Stage stage : kStages) {
      const auto cs = deepspeed::step_collectives(stage, 1'000'003, bpp, t, z, {});
      const deepspeed::LevelBytes sum = deepspeed::level_step_bytes(stage, 1'000'003, bpp, t, z);
      std::uint64_t intra = 0, inter = 0;
      for (const auto& c : cs) {
        intra += c.intra_bytes;
        inter += c.inter_bytes;
      }
      EXPECT_EQ(intra, sum.intra);
      EXPECT_EQ(inter, sum.inter);
    }
  }
  // hpZ's backward gather stays inside the node.
  const auto cs = deepspeed::step_collectives(Stage::zero3, 1'000'003, bpp, t, zpp, {});
  EXPECT_EQ(cs[1].inter_bytes, 0u);
  EXPECT_GT(cs[1].intra_bytes, 0u);
}

}  // namespace
}  // namespace zerodp::plan
