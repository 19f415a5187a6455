// Every optimizer the engine runs is the same optimisation at every stage: with the same seed and
// data, stages 0-3 end with the same bits (as AdamW does, engine_equivalence_test.cc), whatever
// N. And an optimizer is a row and a step: Adagrad, which the engine does not ship, trains here
// from its row of the table and one step function written in this test, nothing else.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "zero/engine_testing.h"
#include "zerodp/common/optimizers.h"
#include "zerodp/optim/rule.h"

namespace zerodp {
namespace {

using testing::train_mlp;

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

model::MlpConfig optimizer_mlp() {
  model::MlpConfig c;
  c.width = 12;
  c.depth = 3;  // 468 parameters
  return c;
}

TEST(EngineOptimizers, EveryStageGivesTheSameBitsAtEveryRankCount) {
  for (Optimizer id : {Optimizer::lion, Optimizer::sgd_momentum, Optimizer::sgd}) {
    const float lr = optim::engine_rule(id)->default_lr / 10;  // the MLP's scale, not the GPT's
    for (int ranks : {1, 3, 4}) {
      zero::EngineOptions o;
      o.optimizer = id;
      o.micro_batch = 3;
      o.clip_norm = 0.05f;
      o.bucket_bytes = 200;  // several buckets a unit, chunks of uneven size
      o.stage = Stage::dp;
      const auto reference = train_mlp(optimizer_mlp(), o, ranks, 10, lr);
      EXPECT_LT(reference.losses.back(), reference.losses.front())
          << optimizer_row(id).word << " N = " << ranks;
      for (int stage = 1; stage <= 3; ++stage) {
        o.stage = stage_from_number(stage);
        const auto run = train_mlp(optimizer_mlp(), o, ranks, 10, lr);
        EXPECT_TRUE(bitwise_equal(run.master, reference.master))
            << optimizer_row(id).word << " stage " << stage << " N = " << ranks;
        EXPECT_EQ(run.losses, reference.losses);
      }
    }
  }
}

// A wide MLP (units of 37,056 elements) on one rank at stages 0 and 3: two engine threads split
// its update and give one thread's bits.
void expect_threads_keep_the_bits(Optimizer id, float lr) {
  model::MlpConfig wide;
  wide.width = 192;
  wide.depth = 2;
  for (int stage : {0, 3}) {
    zero::EngineOptions o;
    o.optimizer = id;
    o.micro_batch = 2;
    o.stage = stage_from_number(stage);
    EXPECT_TRUE(bitwise_equal(train_mlp(wide, o, 1, 3, lr, 1).master,
                              train_mlp(wide, o, 1, 3, lr, 2).master))
        << optimizer_row(id).word << " stage " << stage;
  }
}

// The 8-bit optimizers' blocks are the model's: 4096-element weights of 16 blocks each (the
// biases, under bitsandbytes' 4096, keep fp32 states). Buckets of 500 elements cut blocks between
// ranks at stages 1-3, so a straddling block's absmax is agreed across ranks; the bits match
// stage 0's, where every rank holds every block whole, and runs with whole buckets, and more
// engine threads.
TEST(EngineOptimizers, EightBitOptimizersGiveTheSameBitsAtEveryStageRankCountAndBucket) {
  model::MlpConfig mlp;
  mlp.width = 64;
  mlp.depth = 3;  // 12,480 parameters
  for (Optimizer id : {Optimizer::adam_8bit, Optimizer::lion_8bit}) {
    const float lr = optim::engine_rule(id)->default_lr / 2;
    for (int ranks : {1, 3, 4}) {
      zero::EngineOptions o;
      o.optimizer = id;
      o.micro_batch = 3;
      o.stage = Stage::dp;
      o.bucket_bytes = 8 << 20;
      const auto reference = train_mlp(mlp, o, ranks, 8, lr);
      EXPECT_LT(reference.losses.back(), reference.losses.front())
          << optimizer_row(id).word << " N = " << ranks;
      for (int stage = 0; stage <= 3; ++stage) {
        for (std::size_t bucket : {std::size_t{1000}, std::size_t{8} << 20}) {
          for (int threads : {1, 2}) {
            o.stage = stage_from_number(stage);
            o.bucket_bytes = bucket;
            const auto run = train_mlp(mlp, o, ranks, 8, lr, threads);
            EXPECT_TRUE(bitwise_equal(run.master, reference.master))
                << optimizer_row(id).word << " stage " << stage << " N = " << ranks << " bucket "
                << bucket << " threads " << threads;
          }
        }
      }
    }
    // Units of 37,056 elements: one rank's update is split over the engine's threads by pieces.
    expect_threads_keep_the_bits(id, lr);
  }
  // Their steps are not the 32-bit ones': the states' rounding shows in the weights.
  for (auto [fp32, eight] : {std::pair{Optimizer::adam, Optimizer::adam_8bit},
                             std::pair{Optimizer::lion, Optimizer::lion_8bit}}) {
    zero::EngineOptions o;
    o.micro_batch = 3;
    o.optimizer = fp32;
    const auto full = train_mlp(mlp, o, 2, 8, 1e-3f);
    o.optimizer = eight;
    EXPECT_FALSE(bitwise_equal(train_mlp(mlp, o, 2, 8, 1e-3f).master, full.master))
        << optimizer_row(eight).word;
  }
}

// Adafactor's means and update RMS sum whole rows, columns and tensors, which buckets of 100 and
// 500 elements cut between ranks at stages 1-3: exchanged as exact sums, they give the bits of
// stage 0 (every rank holding every tensor whole), at every rank count, bucket size and thread
// count.
TEST(EngineOptimizers, AdafactorGivesTheSameBitsAtEveryStageRankCountAndBucket) {
  const Optimizer id = Optimizer::adafactor;
  const float lr = optim::engine_rule(id)->default_lr;
  for (int ranks : {1, 3, 4}) {
    zero::EngineOptions o;
    o.optimizer = id;
    o.micro_batch = 3;  // no clipping: the global norm's partial sums follow the buckets
    o.stage = Stage::dp;
    const auto reference = train_mlp(optimizer_mlp(), o, ranks, 8, lr);
    EXPECT_LT(reference.losses.back(), reference.losses.front()) << "N = " << ranks;
    for (int stage = 0; stage <= 3; ++stage) {
      for (std::size_t bucket : {std::size_t{200}, std::size_t{1000}, std::size_t{8} << 20}) {
        for (int threads : {1, 2}) {
          o.stage = stage_from_number(stage);
          o.bucket_bytes = bucket;
          const auto run = train_mlp(optimizer_mlp(), o, ranks, 8, lr, threads);
          EXPECT_TRUE(bitwise_equal(run.master, reference.master))
              << "stage " << stage << " N = " << ranks << " bucket " << bucket << " threads "
              << threads;
          EXPECT_EQ(run.losses, reference.losses);
        }
      }
    }
  }
  // A unit of 37,056 elements split over two engine threads, by elements across its pieces.
  expect_threads_keep_the_bits(id, lr);
  // Its step is not AdamW's.
  zero::EngineOptions o;
  o.micro_batch = 3;
  const auto adamw = train_mlp(optimizer_mlp(), o, 2, 8, lr);
  o.optimizer = id;
  EXPECT_FALSE(bitwise_equal(train_mlp(optimizer_mlp(), o, 2, 8, lr).master, adamw.master));
}

TEST(EngineOptimizers, AnotherRunsAsDifferentBits) {
  // The optimizer really changes the step: each ends elsewhere from the same start.
  zero::EngineOptions o;
  o.micro_batch = 3;
  std::vector<std::vector<float>> ends;
  for (Optimizer id : {Optimizer::adam, Optimizer::lion, Optimizer::sgd_momentum, Optimizer::sgd}) {
    o.optimizer = id;
    ends.push_back(train_mlp(optimizer_mlp(), o, 2, 3, 1e-2f).master);
    for (std::size_t k = 0; k + 1 < ends.size(); ++k) {
      EXPECT_FALSE(bitwise_equal(ends[k], ends.back())) << optimizer_row(id).word << " vs " << k;
    }
  }
}

// Adagrad (torch.optim.Adagrad, no decay, initial accumulator 0): sum += g²;
// p -= lr g / (sqrt(sum) + eps).
void adagrad_step(const optim::StepSpans& s, float grad_mul, float lr, std::int64_t,
                  const optim::Hyper& h) {
  for (std::size_t i = 0; i < s.param.size(); ++i) {
    const float g = s.grad[i] * grad_mul;
    s.slot[0][i] += g * g;
    s.param[i] -= lr * g / (std::sqrt(s.slot[0][i]) + h.eps);
  }
}

TEST(EngineOptimizers, AToyOptimizerIsARowAndAStep) {
  const optim::Rule adagrad{&optimizer_row(Optimizer::adagrad), adagrad_step,
                            optim::Hyper{.eps = 1e-10f}, 1e-2f};
  zero::EngineOptions o;
  o.rule_for_tests = &adagrad;
  o.micro_batch = 3;
  o.stage = Stage::dp;
  const auto reference = train_mlp(optimizer_mlp(), o, 2, 1, 1e-2f);
  // One step from the same start: the weights moved by lr g / |g| = lr where g != 0, so every
  // weight with a gradient moved by lr within fp32 rounding of the weight (|w| < 4 here).
  zero::EngineOptions start = o;
  const auto before = train_mlp(optimizer_mlp(), start, 2, 0, 1e-2f);
  std::size_t moved = 0;
  for (std::size_t i = 0; i < before.master.size(); ++i) {
    const float d = std::fabs(reference.master[i] - before.master[i]);
    if (d == 0.0f) continue;
    ++moved;
    EXPECT_NEAR(d, 1e-2f, 4 * 4 * 0x1p-24f) << i;
  }
  EXPECT_GT(moved, before.master.size() / 2);
  // Its one slot is counted as a second moment (a sum of squares) and sharded as any other.
  for (int stage = 0; stage <= 3; ++stage) {
    o.stage = stage_from_number(stage);
    const auto run = train_mlp(optimizer_mlp(), o, 2, 4, 1e-2f);
    EXPECT_TRUE(bitwise_equal(run.master, train_mlp(
                                              optimizer_mlp(),
                                              [&] {
                                                zero::EngineOptions z = o;
                                                z.stage = Stage::dp;
                                                return z;
                                              }(),
                                              2, 4, 1e-2f)
                                              .master))
        << "stage " << stage;
    const Ledger& l = run.ranks[0].ledger;
    EXPECT_EQ(l.peak(Category::optim_v), l.peak(Category::master32));
    EXPECT_EQ(l.peak(Category::optim_m), 0u);
  }
}

}  // namespace
}  // namespace zerodp
