// Integer flags and sizes as a user may mistype them: each refused with one line naming the
// flag and its range, never wrapped at 32 bits, never a std:: exception's words.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

using testing::run_zerodp;

using zerodp::testing::expect_refused;

TEST(ValuesCli, CountsNeverWrapAt32Bits) {
  // Before: 4294967298 trained on 2 ranks, 2147483648 said "got -2147483648", 4294967297
  // micro-steps ran as 1.
  expect_refused("train --model mlp --ranks 4294967298",
                 "--ranks: expected a whole number from 1 to 1024, got '4294967298'");
  expect_refused("train --model mlp --ranks 2147483648",
                 "--ranks: expected a whole number from 1 to 1024, got '2147483648'");
  expect_refused("train --model mlp --ranks 18446744073709551617",
                 "--ranks: expected a whole number from 1 to 1024, got '18446744073709551617'");
  expect_refused("train --model mlp --grad-accum 4294967297",
                 "--grad-accum: expected a whole number from 1 to 1000000, got '4294967297'");
  expect_refused("measure --steps 4294967297",
                 "--steps: expected a whole number from 1 to 10000, got '4294967297'");
  expect_refused("eval --checkpoint /nonexistent --batch 4294967297",
                 "--batch: expected a whole number from 1 to 65536, got '4294967297'");
  expect_refused("sample --checkpoint /nonexistent --top-k 4294967297",
                 "--top-k: expected a whole number from 1 to 256, got '4294967297'");
  expect_refused("train --layers 4294967297",
                 "--layers: expected a whole number from 1 to 1024, got '4294967297'");
  // A sequence length reads as tokens, 4k = 4096, as plan reads it; the engine's limit is 64k.
  expect_refused("train --seq-len 65k",
                 "--seq-len: expected a whole number of tokens such as 4096 or 4k (k = 1024), at "
                 "most 65536, got '65k'");
  expect_refused("train --seq-len 4kk", "--seq-len: expected a whole number of tokens");
}

TEST(ValuesCli, TimeoutNamesTheFlagAndTheRange) {
  // Before: "the collective timeout must be positive, got -9223372036854775808 ms".
  expect_refused("train --model mlp --timeout 1e16s",
                 "--timeout: expected a duration from 0.001s to 604800s");
  expect_refused("measure --timeout 8d", "--timeout: expected a duration");
}

TEST(ValuesCli, AbsurdSizesAreRefusedWithTheFigureBeforeAllocating) {
  // Before: "zerodp: error: std::bad_alloc" after trying to allocate 1.6 PB. 60B parameters
  // (3575 layers of 4096 x 4096 + 4096) need 16 bytes each; no machine of this kind has 961 GB.
  const auto r = run_zerodp("measure --params 60B --ranks 1 --steps 1");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--params: the run needs 961 GB per rank (model state 960 GB"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("this machine has"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("std::"), std::string::npos) << r.err;
  // Beyond the MLP's 4096 layers: refused for what it is, before any memory figure.
  const auto huge = run_zerodp("measure --params 100T --ranks 1 --steps 1");
  EXPECT_EQ(huge.status, 2) << huge.err;
  EXPECT_NE(huge.err.find("--params: the MLP has at most 68.7B parameters"), std::string::npos)
      << huge.err;
}

TEST(ValuesCli, TrainCountsHaveTheirRanges) {
  // Before: --keep 4294967297 kept 1 checkpoint and deleted the rest.
  expect_refused("train --model mlp --keep 4294967297",
                 "--keep: expected a whole number from 1 to 1000000, got '4294967297'");
  expect_refused("train --model mlp --steps 9223372036854775808",
                 "--steps: expected a whole number from 1 to 99999999");
  // Checkpoint folders hold 8 digits of step: one more would sort before step 99999999.
  expect_refused("train --model mlp --steps 100000000",
                 "--steps: expected a whole number from 1 to 99999999, got '100000000'");
  expect_refused("train --model mlp --log-every 0", "--log-every: expected a whole number from 1");
}

TEST(ValuesCli, SizesAsOtherToolsWriteThemAndWholeNumbersAsCounts) {
  const nlohmann::json base = testing::plan_json("--params 1e9 --gpus 8 --gpu-memory 80GB");
  for (const char* size : {"80gb", "'80 GB'", "80G", "80g"}) {
    EXPECT_EQ(testing::plan_json(std::string("--params 1e9 --gpus 8 --gpu-memory ") + size), base)
        << size;
  }
  EXPECT_EQ(testing::plan_json("--params 1e9 --gpus 8e0 --gpu-memory 80GB"), base);
  const auto r = run_zerodp("train --model mlp --params 20K --ranks 1 --steps 1e1 --out '' --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["steps"], 10);
  expect_refused("train --model mlp --steps 1.5e0",
                 "--steps: expected a whole number from 1 to 99999999, got '1.5e0'");
}

TEST(ValuesCli, TrainRefusesAMicroBatchNoMachineHolds) {
  // Before: "zerodp: error: std::bad_alloc".
  for (const char* model : {"--model mlp --params 20K", "--layers 1 --hidden 32 --heads 2"}) {
    const auto r = run_zerodp(std::string("train ") + model +
                              " --ranks 2 --steps 1 --out '' --micro-batch 4294967297");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("--micro-batch: the run needs "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(" per rank (model state "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("), this machine has "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(" for 2 ranks\n"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace zerodp
