// The planner's replay of the engine's schedule (predict::predict_step), against step times
// worked out by hand for schedules simple enough to follow: every collective waited at once,
// a link so fast it only costs the last reduction, a link so slow the step is the link's.
#include <gtest/gtest.h>

#include "zerodp/common/partition.h"
#include "zerodp/predict/peak.h"
#include "zerodp/predict/schedule.h"

namespace zerodp::predict {
namespace {

// Four MLP layers of 1056 parameters, one bucket each, over 2 hosts of one rank.
EngineRun run_of(Stage stage) {
  EngineRun run;
  run.model = MlpShape{.width = 32, .depth = 4};
  run.stage = stage;
  run.ranks = 2;
  run.bucket_bytes = 2 * 1056;
  run.mpi = true;
  return run;
}
StepCompute even(double forward, double backward, double optimizer = 0.0) {
  return {std::vector<double>(4, forward), std::vector<double>(4, backward), optimizer, 0.0};
}
// 1 byte per second of payload: seconds are bytes.
const Link kByteLink{8.0, 0.0, 1.0};

TEST(CollectiveSeconds, IsTheBusiestHostsBytesOverTheRatePlusItsMessagesLatency) {
  const EngineRun run = run_of(Stage::dp);
  // 1056 16-bit elements over 2 ranks: each sends the other 528 elements, 1056 bytes a phase.
  EXPECT_DOUBLE_EQ(collective_seconds(run, 1, kByteLink, LinkCollective::all_gather, 1056, 2),
                   1056.0);
  EXPECT_DOUBLE_EQ(collective_seconds(run, 1, kByteLink, LinkCollective::all_reduce, 1056, 2),
                   2112.0);
  // A delay d: the handshake (d) and one round trip per phase (2d).
  const Link slow{8.0, 10.0, 1.0};
  EXPECT_DOUBLE_EQ(collective_seconds(run, 1, slow, LinkCollective::reduce_scatter, 1056, 2),
                   10.0 + 20.0 + 1056.0);
  // Framing: 1514 bytes on the link carry 1448 of payload.
  const Link tcp{8.0, 0.0};
  EXPECT_DOUBLE_EQ(collective_seconds(run, 1, tcp, LinkCollective::all_gather, 1448, 2), 1514.0);
  // Both ranks on one host: nothing crosses a link.
  EXPECT_DOUBLE_EQ(collective_seconds(run, 2, kByteLink, LinkCollective::all_reduce, 1056, 2), 0.0);
}

TEST(PredictStep, WithoutOverlapTheStepIsComputePlusEveryCollective) {
  // Every collective waited at once: the step is the compute plus the link's time, whatever the
  // order. Per step: stage 0 all-reduces 4 buckets, stages 1-2 reduce-scatter and all-gather
  // them, stage 3 gathers twice and reduce-scatters (1056 bytes a phase each); the scalars'
  // all-reduce (3 fp32: ranks send 4 and 8 bytes) costs 2 x 8.
  const StepCompute c = even(1000, 2000, 500);
  const double compute = 4 * 1000 + 4 * 2000 + 500;
  const double expected[] = {8 * 1056, 8 * 1056, 8 * 1056, 12 * 1056};
  for (Stage stage : kStages) {
    EngineRun run = run_of(stage);
    run.prefetch = false;
    const ScheduledStep s = predict_step(run, 1, kByteLink, c, false);
    const double link = expected[stage_number(stage)] + 16;
    EXPECT_DOUBLE_EQ(s.comm_seconds, link) << stage_name(stage);
    EXPECT_DOUBLE_EQ(s.step_seconds, compute + link) << stage_name(stage);
    EXPECT_DOUBLE_EQ(s.compute_seconds, compute);
    EXPECT_DOUBLE_EQ(s.efficiency, compute / (compute + link));
  }
}

TEST(PredictStep, AFrozenBaseIsGatheredTwiceAStepAtStageThreeOnly) {
  // LoRA beside a frozen base, every collective waited at once: stage 3 adds to stage 2 the
  // adapters' second gather and two gathers of each of the base's buckets.
  EngineRun run;
  run.model = GptShape{.layers = 2, .heads = 2, .hidden = 16, .seq_len = 8, .lora_rank = 4};
  run.ranks = 2;
  run.bucket_bytes = 2000;
  run.mpi = true;
  run.prefetch = false;
  const std::size_t units = unit_layout(run.model).counts.size();
  const StepCompute c{std::vector<double>(units, 10.0), std::vector<double>(units, 20.0), 5.0, 0.0};
  run.stage = Stage::zero2;
  const ScheduledStep two = predict_step(run, 1, kByteLink, c, false);
  run.stage = Stage::zero3;
  const ScheduledStep three = predict_step(run, 1, kByteLink, c, false);
  const UnitLayout layout = unit_layout(run.model);
  auto gathers = [&](const std::vector<std::uint64_t>& counts) {
    double seconds = 0;
    const std::vector<std::size_t> c(counts.begin(), counts.end());
    for (const Bucket& b : make_partition(c, bucket_elements(run.bucket_bytes), 2, 0).buckets)
      seconds += collective_seconds(run, 1, kByteLink, LinkCollective::all_gather, b.count, 2);
    return seconds;
  };
  const double base = gathers(layout.frozen);
  EXPECT_GT(base, 0.0);
  EXPECT_DOUBLE_EQ(three.comm_seconds - two.comm_seconds, gathers(layout.counts) + 2 * base);
}

TEST(PredictStep, AFastLinkCostsStageZeroOnlyItsLastReduction) {
  // Each bucket's all-reduce (2112 s) hides behind the next unit's backward (5000 s) except the
  // last (unit 0's), which nothing follows; then the scalars (16 s).
  const ScheduledStep s = predict_step(run_of(Stage::dp), 1, kByteLink, even(1000, 5000), true);
  EXPECT_DOUBLE_EQ(s.step_seconds, 4 * 1000 + 4 * 5000 + 2112 + 16);
  EXPECT_DOUBLE_EQ(s.exposed_seconds, 2112 + 16);
}

TEST(PredictStep, ASlowLinkMakesTheStepTheLinks) {
  // Stage 0 on a link 100 times slower than compute: the first reduction starts after unit 3's
  // backward and the link then runs back to back.
  const Link slow{8.0 / 100, 0.0, 1.0};
  const ScheduledStep s = predict_step(run_of(Stage::dp), 1, slow, even(1, 2), true);
  EXPECT_DOUBLE_EQ(s.step_seconds, 4 * 1 + 2 + 100 * (4 * 2112 + 16));
}

TEST(PredictStep, PrefetchHidesStageThreeGathersBehindTheUnitBefore) {
  // Gathers of 1056 s, forward 2000 s per unit: with prefetch each next unit's gather travels
  // while this one computes, so only a pass's first gather is exposed, and backward's
  // reductions go in the link's free time. Without prefetch every gather is waited.
  EngineRun run = run_of(Stage::zero3);
  const StepCompute c = even(2000, 4000);
  run.prefetch = true;
  const ScheduledStep with = predict_step(run, 1, kByteLink, c, true);
  run.prefetch = false;
  const ScheduledStep without = predict_step(run, 1, kByteLink, c, true);
  const double compute = 4 * 2000 + 4 * 4000;
  // forward: gather 0 exposed; backward: gather 3 exposed; the last reduce-scatter (unit 0's)
  // and the scalars end the step.
  EXPECT_DOUBLE_EQ(with.step_seconds, compute + 1056 + 1056 + 1056 + 16);
  EXPECT_GT(without.step_seconds, with.step_seconds + 5 * 1056);
}

TEST(PredictStep, TheSlowestRankSetsThePace) {
  // Rank 1 computes each backward twice as long: the step is its, and a single-rank replay of
  // the slower compute gives the same step.
  const EngineRun run = run_of(Stage::dp);
  const std::vector<StepCompute> ranks = {even(1000, 2000), even(1000, 4000)};
  const ScheduledStep both = predict_step(run, 1, kByteLink, ranks, true);
  EXPECT_DOUBLE_EQ(both.step_seconds,
                   predict_step(run, 1, kByteLink, even(1000, 4000), true).step_seconds);
  EXPECT_DOUBLE_EQ(both.compute_seconds, 4 * 1000 + 4 * 4000);
}

}  // namespace
}  // namespace zerodp::predict
