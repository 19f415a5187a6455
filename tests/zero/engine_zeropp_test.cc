// ZeRO++ in the engine. qwZ (--zeropp qwz): stage 3's parameter gathers move int8 payloads.
//  - With blocks of one element every value is its block's maximum and comes back exactly, so
//    a run is bitwise the plain ZeRO-3 run: the quantized gathers put every chunk, padded or
//    short, where the 16-bit gathers put it.
//  - The bytes the backend counts for the gathers are the payloads' (common/quantize.h), and the
//    host-level prediction (predict_host_send_bytes) is what the ranks counted.
//  - A run is repeatable bit for bit, and it trains.
// hpZ (--zeropp hpz): the backward gathers from each host's secondary copy over the host's
// communicator. It computes with the weights it would have gathered, so a run is bitwise the
// run without it (with qwZ too), and the ring bytes counted on both communicators are the
// prediction's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <tuple>

#include "zero/engine_testing.h"
#include "zerodp/common/partition.h"
#include "zerodp/common/quantize.h"
#include "zerodp/common/shard.h"
#include "zerodp/predict/peak.h"

namespace zerodp {
namespace {

using testing::train_mlp;

// 5 units of 17 x 17 + 17 = 306 elements, cut into buckets of 150, 150 and 6: chunks are uneven
// and, at N = 4, the 6-element bucket leaves a rank with an empty chunk.
const model::MlpConfig kConfig{17, 5};

zero::EngineOptions options(bool qwz, std::size_t block, int hpz_ranks = 0, int qgz_ranks = 0) {
  zero::EngineOptions o;
  o.stage = Stage::zero3;
  o.micro_batch = 2;
  o.bucket_bytes = 300;
  o.zeropp.qwz = qwz;
  o.qwz_block = block;
  o.zeropp.hpz = hpz_ranks > 0;
  o.zeropp.qgz = qgz_ranks > 0;
  o.ranks_per_host = std::max(hpz_ranks, qgz_ranks);
  return o;
}

// The run the tests above train, as the planner sees it.
predict::EngineRun planned(int ranks, bool qwz, std::size_t block, int hpz_ranks = 0,
                           int qgz_ranks = 0) {
  predict::EngineRun run;
  run.model = predict::MlpShape{kConfig.width, std::uint64_t(kConfig.depth)};
  run.stage = Stage::zero3;
  run.ranks = ranks;
  run.bucket_bytes = 300;
  run.zeropp.qwz = qwz;
  run.qwz_block = block;
  run.zeropp.hpz = hpz_ranks > 0;
  run.zeropp.qgz = qgz_ranks > 0;
  run.ranks_per_host = std::max(hpz_ranks, qgz_ranks);
  return run;
}

// The ring bytes of the step's scalar all-reduce (3 fp32): 4 (3 - |c_r|) + 4 (3 - |c_{r+1}|).
std::uint64_t scalar_ring_bytes(int ranks, int r) {
  if (ranks == 1) return 0;
  return 4 * (3 - shard_of(3, ranks, r).size) + 4 * (3 - shard_of(3, ranks, (r + 1) % ranks).size);
}

class Qwz : public ::testing::TestWithParam<int> {};

TEST_P(Qwz, BlocksOfOneAreBitwiseThePlainZero3Run) {
  const int ranks = GetParam();
  const auto plain = train_mlp(kConfig, options(false, 1), ranks, 6);
  const auto quantized = train_mlp(kConfig, options(true, 1), ranks, 6);
  EXPECT_EQ(quantized.losses, plain.losses);
  EXPECT_EQ(quantized.master, plain.master);
}

TEST_P(Qwz, GathersSendThePayloadsThePredictionCounts) {
  const int ranks = GetParam();
  const std::size_t block = 7;  // every chunk ends in a short block
  const int steps = 2;
  std::vector<std::uint64_t> gathered(ranks), scattered(ranks), ring(ranks);
  std::mutex mu;
  const data::SyntheticRegression samples = testing::mlp_samples(kConfig);
  comm::run_thread_ranks(ranks, {}, [&](comm::Communicator& comm) {
    model::Mlp mlp(kConfig);
    zero::Engine engine(mlp, comm, samples, options(true, block));
    const comm::Stats before = comm.stats();
    for (int s = 0; s < steps; ++s) engine.step(1e-2f);
    engine.flush();
    const comm::Stats after = comm.stats();
    std::lock_guard lock(mu);
    gathered[comm.rank()] = after[comm::Collective::all_gather].sent_bytes -
                            before[comm::Collective::all_gather].sent_bytes;
    scattered[comm.rank()] = after[comm::Collective::reduce_scatter].sent_bytes -
                             before[comm::Collective::reduce_scatter].sent_bytes;
    ring[comm.rank()] = after.ring_bytes() - before.ring_bytes();
  });
  // Each gather sends every peer this rank's payload: (N - 1) payloads per bucket, twice a step.
  model::Mlp mlp(kConfig);
  const Partition part =
      make_partition(model::param_counts(mlp.units()), bucket_elements(300), ranks, 0);
  std::uint64_t per_step = 0;
  for (const Bucket& b : part.buckets) {
    per_step += 2 * std::uint64_t(ranks - 1) * quantized_payload(b.count, ranks, block);
  }
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(gathered[r], steps * per_step) << "rank " << r;

  // One rank per host: the host prediction is each rank's gathers and reduce-scatters.
  const predict::EngineRun run = planned(ranks, true, block);
  const std::vector<std::uint64_t> hosts = predict::predict_host_send_bytes(run, 1);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(steps * hosts[r], gathered[r] + scattered[r]) << "rank " << r;
    // The ring prediction `measure` prints, and the scalars'.
    const std::uint64_t scalars = scalar_ring_bytes(ranks, r);
    EXPECT_EQ(ring[r], steps * (predict::predict_rank_ring_bytes(run, r) + scalars))
        << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, Qwz, ::testing::Values(1, 2, 3, 4));

TEST(QwzTraining, RepeatsBitForBitAndTrains) {
  zero::EngineOptions quantized = options(true, 256), plain = options(false, 256);
  quantized.micro_batch = plain.micro_batch = 8;
  const auto first = train_mlp(kConfig, quantized, 3, 30);
  const auto again = train_mlp(kConfig, quantized, 3, 30);
  EXPECT_EQ(first.master, again.master);
  const auto base = train_mlp(kConfig, plain, 3, 30);
  // The weights it computes with are not the plain run's, so neither are its bits ...
  EXPECT_NE(first.master, base.master);
  // ... but it trains as the plain run does: the mean loss of the last five steps is below
  // 0.9 of the first five's for both.
  auto mean = [](const std::vector<float>& l, int from) {
    return (l[from] + l[from + 1] + l[from + 2] + l[from + 3] + l[from + 4]) / 5;
  };
  for (const auto* run : {&base, &first}) {
    ASSERT_TRUE(std::isfinite(mean(run->losses, 25)));
    EXPECT_LT(mean(run->losses, 25), 0.9f * mean(run->losses, 0));
  }
}

// (ranks, ranks per host) with hosts of 1, 2 and all ranks.
class Hpz : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Hpz, TheBackwardFromTheHostsCopyIsBitwiseTheRunWithout) {
  const auto [ranks, per_host] = GetParam();
  for (bool qwz : {false, true}) {
    SCOPED_TRACE(qwz ? "with qwZ" : "without qwZ");
    const auto without = train_mlp(kConfig, options(qwz, 7), ranks, 5);
    const auto with = train_mlp(kConfig, options(qwz, 7, per_host), ranks, 5);
    EXPECT_EQ(with.losses, without.losses);
    EXPECT_EQ(with.master, without.master);
  }
}

TEST_P(Hpz, RingBytesOnBothCommunicatorsAreThePrediction) {
  const int ranks = std::get<0>(GetParam()), per_host = std::get<1>(GetParam());
  const int steps = 2;
  std::vector<std::uint64_t> ring(ranks), world_gathers(ranks);
  std::mutex mu;
  const data::SyntheticRegression samples = testing::mlp_samples(kConfig);
  comm::run_thread_ranks(ranks, {}, [&](comm::Communicator& comm) {
    model::Mlp mlp(kConfig);
    zero::Engine engine(mlp, comm, samples, options(true, 7, per_host));
    engine.step(1e-2f);
    engine.flush();
    const comm::Stats before = engine.comm_stats(), world_before = comm.stats();
    for (int s = 0; s < steps; ++s) engine.step(1e-2f);
    engine.flush();
    const comm::Stats after = engine.comm_stats(), world_after = comm.stats();
    std::lock_guard lock(mu);
    ring[comm.rank()] = after.ring_bytes() - before.ring_bytes();
    world_gathers[comm.rank()] = world_after[comm::Collective::all_gather].ring_bytes -
                                 world_before[comm::Collective::all_gather].ring_bytes;
  });
  const predict::EngineRun run = planned(ranks, true, 7, per_host);
  model::Mlp mlp(kConfig);
  const Partition part =
      make_partition(model::param_counts(mlp.units()), bucket_elements(300), ranks, 0);
  std::uint64_t forward = 0;  // the group's gathers: the forward's payloads only
  for (const Bucket& b : part.buckets) {
    forward += std::uint64_t(ranks - 1) * quantized_payload(b.count, ranks, 7);
  }
  for (int r = 0; r < ranks; ++r) {
    const std::uint64_t scalars = scalar_ring_bytes(ranks, r);
    EXPECT_EQ(ring[r], steps * (predict::predict_rank_ring_bytes(run, r) + scalars)) << r;
    EXPECT_EQ(world_gathers[r], steps * forward) << r;
  }
}

INSTANTIATE_TEST_SUITE_P(RanksAndHosts, Hpz,
                         ::testing::Values(std::tuple{1, 1}, std::tuple{2, 1}, std::tuple{2, 2},
                                           std::tuple{4, 2}, std::tuple{4, 4}, std::tuple{3, 3},
                                           std::tuple{4, 1}));

// qgZ: (ranks, ranks per host).
class Qgz : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Qgz, RepeatsBitForBitAndTrainsAsThePlainRunDoes) {
  const auto [ranks, per_host] = GetParam();
  zero::EngineOptions quantized = options(true, 7, per_host, per_host), plain = options(false, 7);
  quantized.micro_batch = plain.micro_batch = 8;
  const auto first = train_mlp(kConfig, quantized, ranks, 20);
  const auto again = train_mlp(kConfig, quantized, ranks, 20);
  EXPECT_EQ(first.master, again.master);
  EXPECT_EQ(first.losses, again.losses);
  const auto base = train_mlp(kConfig, plain, ranks, 20);
  auto mean = [](const std::vector<float>& l, int from) {
    return (l[from] + l[from + 1] + l[from + 2] + l[from + 3] + l[from + 4]) / 5;
  };
  for (const auto* run : {&base, &first}) {
    ASSERT_TRUE(std::isfinite(mean(run->losses, 15)));
    EXPECT_LT(mean(run->losses, 15), 0.9f * mean(run->losses, 0));
  }
}

TEST_P(Qgz, RingBytesOfAllThreeAreThePrediction) {
  const int ranks = std::get<0>(GetParam()), per_host = std::get<1>(GetParam());
  const int steps = 2;
  std::vector<std::uint64_t> ring(ranks);
  std::mutex mu;
  const data::SyntheticRegression samples = testing::mlp_samples(kConfig);
  comm::run_thread_ranks(ranks, {}, [&](comm::Communicator& comm) {
    model::Mlp mlp(kConfig);
    zero::Engine engine(mlp, comm, samples, options(true, 7, per_host, per_host));
    engine.step(1e-2f);
    engine.flush();
    const comm::Stats before = engine.comm_stats();
    for (int s = 0; s < steps; ++s) engine.step(1e-2f);
    engine.flush();
    std::lock_guard lock(mu);
    ring[comm.rank()] = engine.comm_stats().ring_bytes() - before.ring_bytes();
  });
  const predict::EngineRun run = planned(ranks, true, 7, per_host, per_host);
  for (int r = 0; r < ranks; ++r) {
    const std::uint64_t scalars = scalar_ring_bytes(ranks, r);
    EXPECT_EQ(ring[r], steps * (predict::predict_rank_ring_bytes(run, r) + scalars)) << r;
  }
}

INSTANTIATE_TEST_SUITE_P(RanksAndHosts, Qgz,
                         ::testing::Values(std::tuple{1, 1}, std::tuple{2, 1}, std::tuple{2, 2},
                                           std::tuple{4, 2}, std::tuple{4, 4}, std::tuple{3, 1},
                                           std::tuple{4, 1}));

TEST(HpzOptions, HostsMustDivideTheRanks) {
  EXPECT_THROW(train_mlp(kConfig, options(false, 7, 3), 4, 1), UsageError);
  zero::EngineOptions o = options(false, 7, 2);
  o.stage = Stage::zero1;
  EXPECT_THROW(o.validate(), InvalidArgument);
}

TEST(QwzOptions, OnlyStage3QuantizesItsGathersAndTheBlockIsBounded) {
  zero::EngineOptions o = options(true, 256);
  o.stage = Stage::zero2;
  EXPECT_THROW(o.validate(), InvalidArgument);
  o = options(true, 0);
  EXPECT_THROW(o.validate(), InvalidArgument);
  o = options(true, kMaxQuantBlock + 1);
  EXPECT_THROW(o.validate(), InvalidArgument);
  EXPECT_NO_THROW(options(true, kMaxQuantBlock).validate());
}

}  // namespace
}  // namespace zerodp
