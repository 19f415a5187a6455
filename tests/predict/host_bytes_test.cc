// What each host sends off itself per step (predict::predict_host_send_bytes), against sums
// written here pair by pair, and against the ring column where they must agree.
#include <gtest/gtest.h>

#include "zerodp/common/shard.h"
#include "zerodp/plan/comm.h"
#include "zerodp/plan/memory.h"
#include "zerodp/predict/peak.h"

namespace zerodp::predict {
namespace {

// Buckets of 1000 elements: each MLP layer of width 32 (1056 parameters) is cut into 1000 and
// 56; over N = 6 ranks neither splits evenly (167 x 5 + 165, 10 x 5 + 6).
EngineRun run_of(Stage stage, int ranks) {
  EngineRun run;
  run.model = MlpShape{.width = 32, .depth = 3};
  run.stage = stage;
  run.ranks = ranks;
  run.bucket_bytes = 2000;
  return run;
}

TEST(HostSendBytes, OneRankPerHostIsTheRingColumnWhenNDividesEveryBucket) {
  EngineRun run = run_of(Stage::dp, 4);
  run.model = MlpShape{.width = 32, .depth = 3};  // 1056 per layer: buckets 1000 and 56
  run.bucket_bytes = 2 * 1056;                    // one bucket per layer, 1056 = 4 * 264
  const std::uint64_t params = param_count(run.model);
  for (Stage stage : kStages) {
    run.stage = stage;
    for (std::uint64_t sent : predict_host_send_bytes(run, 1)) {
      EXPECT_EQ(sent, plan::ring_step_bytes(stage, params, {2, 2, 12}, 4, 0)) << stage_name(stage);
    }
  }
}

TEST(HostSendBytes, RanksOfOneHostSendEachOtherNothing) {
  for (Stage stage : kStages) {
    const EngineRun run = run_of(stage, 6);
    // Summed pair by pair: rank r sends peer j its chunk of a reduce-scatter and its own chunk
    // of an all-gather (two at stage 3), counted only when j is on another host (2 ranks a
    // host, 3 hosts).
    const int gathers = stage == Stage::zero3 ? 2 : 1;
    std::vector<std::uint64_t> want(3, 0);
    for (std::uint64_t count : {std::uint64_t{1000}, std::uint64_t{56}}) {  // each layer's buckets
      for (int r = 0; r < 6; ++r) {
        for (int j = 0; j < 6; ++j) {
          if (j / 2 == r / 2) continue;
          want[r / 2] += 3 * 2 *  // three layers, 2 bytes an element
                         (shard_of(count, 6, j).size + gathers * shard_of(count, 6, r).size);
        }
      }
    }
    EXPECT_EQ(predict_host_send_bytes(run, 2), want) << stage_name(stage);
    EXPECT_NE(want[0], want[2]);  // the trailing ranks' chunks are shorter
    // One host holding every rank sends nothing off it.
    EXPECT_EQ(predict_host_send_bytes(run, 6), std::vector<std::uint64_t>{0});
  }
}

}  // namespace
}  // namespace zerodp::predict
