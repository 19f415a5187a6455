// The one table of what each stage shards, and the stage's names and parsing.
#include "zerodp/common/stage.h"

#include <gtest/gtest.h>

#include "zerodp/common/error.h"

namespace zerodp {
namespace {

int sharded_count(Sharding s) {
  return int(s.optimizer_states) + int(s.gradients) + int(s.parameters);
}

TEST(Stage, EachStageShardsWhatThePreviousDoesAndOneThingMore) {
  for (std::size_t i = 0; i < kStages.size(); ++i) {
    const Sharding s = sharding(kStages[i]);
    EXPECT_EQ(sharded_count(s), int(i)) << stage_name(kStages[i]);
    EXPECT_EQ(stage_number(kStages[i]), int(i));
    if (i == 0) continue;
    const Sharding before = sharding(kStages[i - 1]);
    EXPECT_TRUE(!before.optimizer_states || s.optimizer_states);
    EXPECT_TRUE(!before.gradients || s.gradients);
    EXPECT_TRUE(!before.parameters || s.parameters);
  }
  // The seed's table: ZeRO-1 the optimizer states, ZeRO-2 + gradients, ZeRO-3 + parameters.
  EXPECT_EQ(sharding(Stage::zero1), (Sharding{true, false, false}));
  EXPECT_EQ(sharding(Stage::zero2), (Sharding{true, true, false}));
  EXPECT_EQ(sharding(Stage::zero3), (Sharding{true, true, true}));
}

TEST(Stage, NamesAndParsing) {
  EXPECT_EQ(stage_name(Stage::dp), "DP");
  EXPECT_EQ(stage_name(Stage::zero3), "ZeRO-3");
  EXPECT_EQ(parse_stage("2"), Stage::zero2);
  EXPECT_EQ(stage_from_number(1), Stage::zero1);
  for (const char* bad : {"4", "-1", "", "2.0", "02", "zero3"}) {
    EXPECT_THROW(parse_stage(bad), UsageError) << bad;
  }
  try {
    stage_from_number(7);
    FAIL() << "7 is no stage";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "stage: expected 0, 1, 2 or 3, got 7");
  }
}

}  // namespace
}  // namespace zerodp
