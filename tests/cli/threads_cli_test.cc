// `--threads`: the threads a rank's GPT computes on, as a user meets it in train and measure.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli/cli_testing.h"
#include "testing/temp_dir.h"

namespace zerodp {
namespace {

using testing::expect_refused;
using testing::run_zerodp;
using testing::weights_of;

// --micro-batch 4 so that two threads each take samples of their own.
const std::string kOneRank =
    "train --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 4 --ranks 1 --out '' ";

TEST(ThreadsCli, BadInputIsOneLineNamingTheFlag) {
  for (const char* bad : {"0", "x", "257", "-1", "2.5", "AUTO"}) {
    expect_refused(kOneRank + "--steps 1 --threads " + bad,
                   "--threads: expected a whole number from 1 to 256");
  }
  // The MLP computes on one thread: another count is refused, not ignored.
  expect_refused("train --model mlp --ranks 1 --steps 1 --out '' --threads 2", "--threads");
  expect_refused("measure --model mlp --ranks 1 --steps 1 --threads 2", "--threads");
}

// Two threads hold a second set of the layers' scratch: the ledger counts it and the prediction
// knows it, so the peak measured is the peak predicted; the run records the count.
TEST(ThreadsCli, TheRunRecordsItsThreadsAndItsPeakIsPredicted) {
  for (const char* threads : {"1", "2"}) {
    const auto r = run_zerodp(kOneRank + "--steps 2 --json --threads " + threads);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["threads"], std::stoi(threads));
    EXPECT_EQ(j["peak_bytes"], j["predicted_peak_bytes"]) << "--threads " << threads;
  }
  // auto takes no more threads than the micro-batch has samples, whatever the cores.
  const auto one = run_zerodp(
      "train --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 1 --ranks 1 --out '' "
      "--steps 1 --json");
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out)["threads"], 1);
  // --dry-run plans the count it will run, and says it.
  const auto plan = run_zerodp(kOneRank + "--steps 2 --threads 2 --dry-run --json");
  ASSERT_EQ(plan.status, 0) << plan.err;
  const auto run2 = run_zerodp(kOneRank + "--steps 2 --threads 2 --json");
  ASSERT_EQ(run2.status, 0) << run2.err;
  EXPECT_EQ(nlohmann::json::parse(plan.out)["threads"], 2);
  EXPECT_EQ(nlohmann::json::parse(plan.out)["predicted_peak_bytes"],
            nlohmann::json::parse(run2.out)["peak_bytes"]);
  const auto header = run_zerodp(kOneRank + "--steps 1 --threads 2");
  ASSERT_EQ(header.status, 0) << header.err;
  EXPECT_TRUE(testing::has(header.out, "\nthreads: 2 per rank (--threads)\n")) << header.out;
  const auto measured = run_zerodp(
      "measure --model gpt --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 4 "
      "--ranks 1 --steps 1 --threads 2 --json");
  ASSERT_EQ(measured.status, 0) << measured.err;
  const auto m = nlohmann::json::parse(measured.out);
  EXPECT_EQ(m["threads"], 2);
  EXPECT_EQ(m["per_rank"][0]["peak_bytes"], m["predicted"]["peak_bytes"]);
}

// A resume takes the checkpoint's threads, so it ends with the bits of the run never
// interrupted; another count is allowed (the state is the same) and said.
TEST(ThreadsCli, AResumeTakesTheCheckpointsThreads) {
  const std::string dir = testing::fresh_path("threads_resume");
  const auto first =
      run_zerodp(kOneRank + "--steps 4 --threads 2 --save-every 2 --save-dir '" + dir + "' --json");
  ASSERT_EQ(first.status, 0) << first.err;
  const auto resumed =
      run_zerodp(kOneRank + "--steps 4 --resume '" + dir + "/step-00000002' --json");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(nlohmann::json::parse(resumed.out)["threads"], 2);
  EXPECT_EQ(weights_of(resumed), weights_of(first));
  // The checkpoint's ranks however written, and the header says where the count came from.
  const auto written = run_zerodp(
      "train --layers 1 --heads 2 --hidden 32 --seq-len 16 --ranks 01 --out '' --steps 4 "
      "--resume '" +
      dir + "/step-00000002'");
  ASSERT_EQ(written.status, 0) << written.err;
  EXPECT_TRUE(testing::has(written.out, "\nthreads: 2 per rank (the checkpoint's)\n"))
      << written.out;
  const auto other =
      run_zerodp(kOneRank + "--steps 3 --threads 1 --resume '" + dir + "/step-00000002'");
  ASSERT_EQ(other.status, 0) << other.err;
  EXPECT_TRUE(testing::has(other.out,
                           "resume: --threads 1 (the checkpoint's run: 2): the gradients sum in "
                           "another order from the next step"))
      << other.out;
  // On other ranks the resume cannot be bitwise: auto fits the threads to the new ranks.
  const auto two = run_zerodp(
      "train --layers 1 --heads 2 --hidden 32 --seq-len 16 --ranks 2 --out '' --steps 3 "
      "--resume '" +
      dir + "/step-00000002' --json");
  ASSERT_EQ(two.status, 0) << two.err;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(nlohmann::json::parse(two.out)["threads"], std::max(1, cores / 2));
}

}  // namespace
}  // namespace zerodp
