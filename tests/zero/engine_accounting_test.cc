// What the ledger and the byte counters measure equals the closed forms of the design:
// model state 16Φ, 4Φ + 12Φ/N, 2Φ + 14Φ/N, 16Φ/N per rank (up to the chunk rounding of each
// bucket), and the bytes a ring sends.
#include <gtest/gtest.h>

#include "zero/engine_testing.h"
#include "zerodp/common/partition.h"
#include "zerodp/common/shard.h"

namespace zerodp {
namespace {

using testing::train_mlp;

struct Expect {
  std::size_t model_state;
  std::uint64_t comm_per_step;
};

// The closed form for rank r, from the same partition the engine uses.
Expect expected(const model::MlpConfig& config, int stage, int ranks, int rank,
                std::size_t bucket_bytes) {
  model::Mlp mlp(config);
  const Partition part =
      make_partition(model::param_counts(mlp.units()), bucket_elements(bucket_bytes), ranks, rank);
  const std::size_t phi = part.total, local = part.local_total;
  const std::size_t state[4] = {16 * phi, 4 * phi + 12 * local, 2 * phi + 14 * local, 16 * local};
  std::uint64_t reduce_scatter = 0, all_gather = 0;
  for (const Bucket& b : part.buckets) {
    const std::size_t mine = shard_of(b.count, ranks, rank).size;
    const std::size_t next = shard_of(b.count, ranks, (rank + 1) % ranks).size;
    reduce_scatter += 2 * (b.count - mine);
    all_gather += 2 * (b.count - next);
  }
  const std::uint64_t comm[4] = {reduce_scatter + all_gather, reduce_scatter + all_gather,
                                 reduce_scatter + all_gather, reduce_scatter + 2 * all_gather};
  return {state[stage], comm[stage]};
}

class Accounting : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Accounting, LedgerAndBytesEqualTheClosedForms) {
  const auto [stage, ranks] = GetParam();
  model::MlpConfig config;
  config.width = 16;
  config.depth = 5;  // 5 x 272 = 1360 parameters
  zero::EngineOptions o;
  o.stage = stage_from_number(stage);
  o.micro_batch = 2;
  o.bucket_bytes = 300;  // 150 elements: every unit is cut into two buckets
  const int steps = 3;
  const auto run = train_mlp(config, o, ranks, steps);
  const double phi = 1360.0;
  for (int r = 0; r < ranks; ++r) {
    const Expect e = expected(config, stage, ranks, r, o.bucket_bytes);
    EXPECT_EQ(run.ranks[r].model_state_bytes, e.model_state) << "rank " << r;
    EXPECT_EQ(run.ranks[r].comm_bytes, steps * e.comm_per_step) << "rank " << r;
  }
  // Against the planner's formula: over all ranks the shards hold Φ elements exactly, so the
  // sum is N times the formula; each rank is at most one element per bucket above it (the
  // chunk capacity is ceil(count / N)).
  const double formula[4] = {16 * phi, 4 * phi + 12 * phi / ranks, 2 * phi + 14 * phi / ranks,
                             16 * phi / ranks};
  const double sharded_bytes_per_param[4] = {0, 12, 14, 16};
  double sum = 0;
  for (int r = 0; r < ranks; ++r) {
    sum += double(run.ranks[r].model_state_bytes);
    EXPECT_LT(double(run.ranks[r].model_state_bytes),
              formula[stage] + sharded_bytes_per_param[stage] * 10 + 1e-9);
  }
  EXPECT_DOUBLE_EQ(sum, ranks * formula[stage]);
}

INSTANTIATE_TEST_SUITE_P(StagesByRanks, Accounting,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3),
                                            ::testing::Values(1, 2, 3, 4)));

TEST(Accounting, Stage3SendsOneAndAHalfTimesStage0) {
  model::MlpConfig config;
  config.width = 32;
  config.depth = 4;  // 4 x 1056: divisible by 4, so the ring ratio is exactly 1.5
  zero::EngineOptions o;
  o.micro_batch = 2;
  o.stage = Stage::dp;
  const auto dp = train_mlp(config, o, 4, 2);
  o.stage = Stage::zero3;
  const auto z3 = train_mlp(config, o, 4, 2);
  EXPECT_EQ(2 * z3.ranks[0].comm_bytes, 3 * dp.ranks[0].comm_bytes);
  EXPECT_EQ(dp.ranks[0].comm_bytes, 2u * 4 * 1056 * 2 * 3 / 4 * 2);  // 2 steps of 4Φ(N-1)/N
}

TEST(Accounting, Stage3HoldsAtMostTwoGatheredUnitsPlusPrefetch) {
  model::MlpConfig config;
  config.width = 16;
  config.depth = 6;
  zero::EngineOptions o;
  o.stage = Stage::zero3;
  o.micro_batch = 2;
  const auto with = train_mlp(config, o, 2, 2);
  o.prefetch = false;
  const auto without = train_mlp(config, o, 2, 2);
  const std::size_t unit_bytes = 2 * (16 * 16 + 16);
  // Without prefetch one unit is gathered at a time; with it, the next one travels too.
  EXPECT_EQ(without.ranks[0].ledger.peak(Category::gathered_params), unit_bytes);
  EXPECT_EQ(with.ranks[0].ledger.peak(Category::gathered_params), 2 * unit_bytes);
  // Stage 2 never gathers.
  o.stage = Stage::zero2;
  EXPECT_EQ(train_mlp(config, o, 2, 1).ranks[0].ledger.peak(Category::gathered_params), 0u);
}

}  // namespace
}  // namespace zerodp
