// Faults during training end cleanly: an fp16 overflow on one rank skips the step on all,
// and a rank that fails or stalls ends the run on every rank with an error, not a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "zero/engine_testing.h"
#include "zerodp/comm/communicator.h"
#include "zerodp/common/error.h"
#include "zerodp/model/mlp.h"
#include "zerodp/zero/engine.h"

namespace zerodp {
namespace {

// The MLP, with a fault injected on one rank at one optimizer step.
class FaultyMlp : public model::Mlp {
 public:
  enum class Fault { none, inf_gradient, nan_gradient, throws, stalls };
  FaultyMlp(int rank, int faulty_rank, int faulty_step, Fault fault)
      : Mlp(config()),
        rank_(rank),
        faulty_rank_(faulty_rank),
        faulty_step_(faulty_step),
        fault_(fault) {}
  static model::MlpConfig config() {
    model::MlpConfig c;
    c.width = 8;
    c.depth = 3;
    return c;
  }
  void begin_micro_batch(const model::MicroBatch& b) override {
    ++step_;
    if (armed() && fault_ == Fault::throws)
      throw Error("injected failure on rank " + std::to_string(rank_));
    if (armed() && fault_ == Fault::stalls) std::this_thread::sleep_for(std::chrono::seconds(3));
    Mlp::begin_micro_batch(b);
  }
  void backward(int unit, const model::UnitViews& views) override {
    Mlp::backward(unit, views);
    if (armed() && unit == 0 && fault_ == Fault::inf_gradient) {
      views.grads[0][3] = std::numeric_limits<float>::infinity();
    }
    if (armed() && unit == 0 && fault_ == Fault::nan_gradient) {
      views.grads[0][5] = std::numeric_limits<float>::quiet_NaN();
    }
  }

 private:
  bool armed() const { return rank_ == faulty_rank_ && step_ == faulty_step_; }
  int rank_, faulty_rank_, faulty_step_;
  Fault fault_;
  int step_ = 0;  // one micro-batch per step here
};

TEST(Faults, Fp16OverflowOnOneRankSkipsTheStepEverywhere) {
  for (auto fault : {FaultyMlp::Fault::inf_gradient, FaultyMlp::Fault::nan_gradient}) {
    const data::SyntheticRegression samples = testing::mlp_samples(FaultyMlp::config());
    for (int stage : {0, 2, 3}) {
      std::mutex mu;
      comm::run_thread_ranks(3, {}, [&](comm::Communicator& comm) {
        FaultyMlp mlp(comm.rank(), 1, 3, fault);
        zero::EngineOptions o;
        o.stage = stage_from_number(stage);
        o.precision = DType::f16;
        o.loss_scale.initial = 256.0f;  // low enough that only the injected fault overflows
        o.micro_batch = 2;
        zero::Engine engine(mlp, comm, samples, o);
        engine.step(1e-2f);
        const zero::StepResult second = engine.step(1e-2f);
        const std::vector<float> before = engine.gather_master();
        const zero::StepResult third = engine.step(1e-2f);  // rank 1's gradient overflows
        const std::vector<float> after = engine.gather_master();
        const zero::StepResult fourth = engine.step(1e-2f);
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_FALSE(second.skipped);
        EXPECT_TRUE(third.skipped) << "stage " << stage << " rank " << comm.rank();
        EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * 4), 0)
            << "weights changed on a skipped step, stage " << stage;
        EXPECT_EQ(fourth.loss_scale, third.loss_scale / 2);
        EXPECT_FALSE(fourth.skipped);
        EXPECT_EQ(engine.steps_done(), 3);  // the skipped step is not an AdamW step
      });
    }
  }
}

struct InjectedFault {
  int rank, step;
  FaultyMlp::Fault fault;
};

// Trains the MLP with ZeRO `stage` on `ranks` thread ranks for `steps` steps, with the fault
// injected on its rank at its step.
void train_with_fault(int ranks, const comm::Options& options, int stage, int steps,
                      InjectedFault f) {
  const data::SyntheticRegression samples = testing::mlp_samples(FaultyMlp::config());
  comm::run_thread_ranks(ranks, options, [&](comm::Communicator& comm) {
    FaultyMlp mlp(comm.rank(), f.rank, f.step, f.fault);
    zero::EngineOptions o;
    o.stage = stage_from_number(stage);
    o.micro_batch = 2;
    zero::Engine engine(mlp, comm, samples, o);
    for (int s = 0; s < steps; ++s) engine.step(1e-2f);
  });
}

TEST(Faults, ARankThatThrowsEndsTheRunOnEveryRank) {
  const auto t0 = std::chrono::steady_clock::now();
  comm::Options options;
  options.timeout = std::chrono::seconds(60);
  try {
    train_with_fault(4, options, 3, 10, {2, 3, FaultyMlp::Fault::throws});
    FAIL() << "the run should have failed";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("injected failure on rank 2"), std::string::npos)
        << e.what();
  }
  // The others learn of it at their next collective, not after the 60 s timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST(Faults, ARankThatStallsTimesOutWithItsNumber) {
  comm::Options options;
  options.timeout = std::chrono::milliseconds(400);
  try {
    train_with_fault(3, options, 2, 4, {1, 2, FaultyMlp::Fault::stalls});
    FAIL() << "the run should have timed out";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1"), std::string::npos) << what;
    EXPECT_NE(what.find("timed out"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace zerodp
