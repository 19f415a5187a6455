// A stop request made on one rank (a signal that reached one process, or a flag one thread
// read before the others) reaches every rank at the same step, rides on the step's scalar
// all-reduce without a byte more, and changes nothing in the training itself.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <mutex>

#include "zero/engine_testing.h"

namespace zerodp {
namespace {

model::MlpConfig stop_test_mlp() {
  model::MlpConfig c;
  c.width = 12;
  c.depth = 3;
  return c;
}

struct RankSteps {
  std::vector<zero::StepResult> steps;
  std::vector<float> master;
};

// Trains `steps` steps on `ranks` thread ranks; asks(rank, step) is the rank's stop request
// at each 0-based step.
std::vector<RankSteps> train(int ranks, int stage, zero::EngineOptions o, int steps,
                             const std::function<bool(int, int)>& asks) {
  std::vector<RankSteps> out(ranks);
  std::mutex mu;
  const data::SyntheticRegression samples = testing::mlp_samples(stop_test_mlp());
  o.stage = stage_from_number(stage);  // before the ranks start: they share o
  comm::run_thread_ranks(ranks, {}, [&](comm::Communicator& comm) {
    model::Mlp mlp(stop_test_mlp());
    zero::Engine engine(mlp, comm, samples, o);
    RankSteps mine;
    for (int s = 0; s < steps; ++s) {
      mine.steps.push_back(engine.step(1e-2f, [&] { return asks(comm.rank(), s); }));
    }
    mine.master = engine.gather_master();
    std::lock_guard<std::mutex> lock(mu);
    out[comm.rank()] = std::move(mine);
  });
  return out;
}

TEST(EngineStop, ARequestOnOneRankReachesEveryRankAtThatStepAndChangesNothingElse) {
  zero::EngineOptions o;
  o.micro_batch = 2;
  for (int stage : {0, 1, 2, 3}) {
    const auto plain = train(3, stage, o, 5, [](int, int) { return false; });
    const auto asked = train(3, stage, o, 5, [](int rank, int s) { return rank == 1 && s == 2; });
    for (int r = 0; r < 3; ++r) {
      for (int s = 0; s < 5; ++s) {
        EXPECT_EQ(asked[r].steps[s].stop_requested, s == 2)
            << "stage " << stage << " rank " << r << " step " << s;
        EXPECT_FALSE(plain[r].steps[s].stop_requested);
        EXPECT_EQ(asked[r].steps[s].scalar_bytes, plain[r].steps[s].scalar_bytes);
        EXPECT_EQ(asked[r].steps[s].scalar_sent_bytes, plain[r].steps[s].scalar_sent_bytes);
        EXPECT_EQ(asked[r].steps[s].ring_bytes, plain[r].steps[s].ring_bytes);
        EXPECT_EQ(asked[r].steps[s].loss, plain[r].steps[s].loss);
      }
      ASSERT_EQ(asked[r].master.size(), plain[r].master.size());
      EXPECT_EQ(std::memcmp(asked[r].master.data(), plain[r].master.data(),
                            plain[r].master.size() * sizeof(float)),
                0)
          << "a stop request changed the weights, stage " << stage;
    }
  }
}

TEST(EngineStop, NoRequestFunctionCostsTheSameBytesAsBefore) {
  // 3 floats of loss, norm and flags: what the planner and `zerodp measure` count.
  zero::EngineOptions o;
  o.micro_batch = 2;
  const testing::TrainRun run = testing::train_mlp(stop_test_mlp(), o, 4, 2);
  const auto asked = train(4, 3, o, 2, [](int rank, int) { return rank == 3; });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(asked[r].steps[0].scalar_bytes + asked[r].steps[1].scalar_bytes,
              run.ranks[r].scalar_bytes);
  }
}

TEST(EngineStop, OverflowAndStopAreToldApartWhenBothComeAtOneStep) {
  // fp16 with a loss scale that overflows every gradient: every rank skips its first steps.
  zero::EngineOptions o;
  o.micro_batch = 2;
  o.precision = DType::f16;
  o.loss_scale.initial = 1e30f;
  for (int ranks : {1, 3, 4}) {
    const auto both = train(ranks, 2, o, 2, [](int rank, int s) { return s == 0 && rank == 0; });
    const auto every = train(ranks, 2, o, 2, [](int, int) { return true; });
    for (int r = 0; r < ranks; ++r) {
      EXPECT_TRUE(both[r].steps[0].skipped);
      EXPECT_TRUE(both[r].steps[0].stop_requested);
      EXPECT_TRUE(both[r].steps[1].skipped);
      EXPECT_FALSE(both[r].steps[1].stop_requested);
      EXPECT_TRUE(every[r].steps[0].skipped && every[r].steps[0].stop_requested);
    }
  }
  // No overflow, every rank asking: a stop, and no skipped step.
  o.precision = DType::bf16;
  const auto all_stop = train(4, 1, o, 1, [](int, int) { return true; });
  for (const RankSteps& r : all_stop) {
    EXPECT_TRUE(r.steps[0].stop_requested);
    EXPECT_FALSE(r.steps[0].skipped);
  }
}

}  // namespace
}  // namespace zerodp
