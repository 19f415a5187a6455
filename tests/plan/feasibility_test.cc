#include "zerodp/plan/feasibility.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>

namespace zerodp::plan {
namespace {

const BytesPerParam kAdam{};

TEST(Feasibility, AnExactEqualityFitsAndOneByteLessDoesNot) {
  const std::uint64_t phi = 175'000'000'000;
  // 16Φ/50 = 56 GB exactly.
  EXPECT_TRUE(fits(phi, 50, Stage::zero3, kAdam, 56'000'000'000));
  EXPECT_FALSE(fits(phi, 50, Stage::zero3, kAdam, 55'999'999'999));
  EXPECT_EQ(min_gpus(phi, Stage::zero3, kAdam, 56'000'000'000), 50u);
  EXPECT_EQ(min_gpus(phi, Stage::zero3, kAdam, 55'999'999'999), 51u);
  // The replicated part alone exactly at the budget: only N → ∞ would fit, no N does.
  EXPECT_FALSE(min_gpus(phi, Stage::zero1, kAdam, 4 * phi));
  // One element per rank on top of the floor fits at N = Φ.
  EXPECT_EQ(min_gpus(1000, Stage::zero1, kAdam, 4 * 1000 + 12), 1000u);
  // A stage that shards nothing fits at N = 1 or never.
  EXPECT_EQ(min_gpus(phi, Stage::dp, kAdam, 16 * phi), 1u);
  EXPECT_FALSE(min_gpus(phi, Stage::dp, kAdam, 16 * phi - 1));
  EXPECT_EQ(min_gpus(10, Stage::zero1, BytesPerParam{4, 4, 0}, 80), 1u);
}

TEST(Feasibility, LeastNFitsAndOneFewerDoesNotOnBothSidesOfEveryBoundary) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const std::uint64_t phi = 1 + rng() % 5'000'000;
    const BytesPerParam b{static_cast<std::uint32_t>(1 + rng() % 4),
                          static_cast<std::uint32_t>(1 + rng() % 4),
                          static_cast<std::uint32_t>(rng() % 13)};
    const Stage s = kStages[rng() % 4];
    // Budgets exactly at, just under and around a stage's value at some N.
    const int at = 1 + static_cast<int>(rng() % 5000);
    const std::uint64_t exact = model_state_bytes(phi, at, s, b);
    for (std::uint64_t budget : {exact, exact - 1, exact + 1, exact / 2 + rng() % (exact + 1)}) {
      const auto n = min_gpus(phi, s, b, budget);
      if (!n) {
        // Nothing fits: not even one element per rank.
        EXPECT_FALSE(
            fits(phi, static_cast<int>(std::min<std::uint64_t>(phi, 1 << 30)), s, b, budget));
        continue;
      }
      ASSERT_LE(*n, phi);  // N = Φ already holds one element per rank
      EXPECT_TRUE(fits(phi, static_cast<int>(*n), s, b, budget));
      if (*n > 1) {
        EXPECT_FALSE(fits(phi, static_cast<int>(*n - 1), s, b, budget));
      }
      if (budget == exact) {
        EXPECT_LE(*n, static_cast<std::uint64_t>(at));
      }
    }
  }
}

TEST(Feasibility, RoundingToANodeSizeRoundsUp) {
  const std::uint64_t phi = 175'000'000'000, budget = 60'000'000'000;
  EXPECT_EQ(min_gpus(phi, Stage::zero3, kAdam, budget, 1), 47u);
  EXPECT_EQ(min_gpus(phi, Stage::zero3, kAdam, budget, 8), 48u);
  EXPECT_EQ(min_gpus(phi, Stage::zero3, kAdam, budget, 47), 47u);
  EXPECT_EQ(min_gpus(phi, Stage::zero3, kAdam, budget, 100), 100u);
  EXPECT_EQ(min_gpus(phi, Stage::dp, kAdam, 16 * phi, 8), 8u);
}

TEST(Inverse, LargestModelFitsAndOneMoreParameterDoesNot) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 1000);
    const std::uint64_t budget = 1 + rng() % 100'000'000'000ull;
    const BytesPerParam b{static_cast<std::uint32_t>(1 + rng() % 4),
                          static_cast<std::uint32_t>(1 + rng() % 4),
                          static_cast<std::uint32_t>(rng() % 13)};
    const Stage s = kStages[rng() % 4];
    const std::uint64_t phi = max_params(n, s, b, budget);
    if (phi > 0) {
      EXPECT_TRUE(fits(phi, n, s, b, budget));
    }
    EXPECT_FALSE(fits(phi + 1, n, s, b, budget)) << "N=" << n << " budget=" << budget;
  }
}

TEST(Inverse, SeedNumbers) {
  // 8 GPUs of 80 GB, no activations: 5B under DP (16Φ), 40B under ZeRO-3 (2Φ at N = 8).
  EXPECT_EQ(max_params(8, Stage::dp, kAdam, 80'000'000'000), 5'000'000'000u);
  EXPECT_EQ(max_params(8, Stage::zero3, kAdam, 80'000'000'000), 40'000'000'000u);
  // 47 GPUs with 60 GB for model state hold GPT-3 under ZeRO-3, 46 do not.
  EXPECT_GE(max_params(47, Stage::zero3, kAdam, 60'000'000'000), 175'000'000'000u);
  EXPECT_LT(max_params(46, Stage::zero3, kAdam, 60'000'000'000), 175'000'000'000u);
  EXPECT_EQ(max_params(1, Stage::dp, kAdam, 15), 0u);
}

// With an 8-bit K the state is not linear in the shard, and a shard under the size rule holds
// more bytes an element: the least N and the largest Φ agree with every N and Φ counted one by
// one.
TEST(Feasibility, AnEightBitOptimizersAnswersAgreeWithCountingEveryN) {
  for (const Optimizer optimizer : {Optimizer::adam_8bit, Optimizer::lion_8bit}) {
    const BytesPerParam b = bytes_per_param(Precision::bf16, optimizer);
    for (const std::uint64_t phi : {1ull, 4095ull, 4096ull, 20'000ull, 100'003ull}) {
      for (const Stage stage : kStages) {
        for (const std::uint64_t budget :
             {10ull, 50'000ull, 120'000ull, 400'000ull, 2'000'000ull}) {
          for (const std::uint64_t round_to : {1ull, 3ull}) {
            std::optional<std::uint64_t> least;
            for (std::uint64_t n = round_to; n <= 2 * phi + 8; n += round_to) {
              if (model_state_bytes(phi, int(n), stage, b) <= budget) {
                least = n;
                break;
              }
            }
            EXPECT_EQ(min_gpus(phi, stage, b, budget, round_to), least)
                << phi << " " << stage_number(stage) << " " << budget << " " << round_to;
          }
        }
      }
    }
    for (const int ranks : {1, 3, 8}) {
      for (const Stage stage : kStages) {
        for (const std::uint64_t budget : {0ull, 100ull, 50'000ull, 200'000ull}) {
          // Every Φ up to one whose state exceeds the budget even at the fewest bytes an
          // element (ZeRO-3's P + G + K split N ways: more than 8 / N).
          const std::uint64_t beyond = budget * std::uint64_t(ranks) / 8 + 2;
          ASSERT_GT(model_state_bytes(beyond, ranks, stage, b), budget);
          std::uint64_t largest = 0;
          for (std::uint64_t phi = 1; phi <= beyond; ++phi) {
            if (model_state_bytes(phi, ranks, stage, b) <= budget) largest = phi;
          }
          EXPECT_EQ(max_params(ranks, stage, b, budget), largest)
              << ranks << " " << stage_number(stage) << " " << budget;
        }
      }
    }
  }
}

}  // namespace
}  // namespace zerodp::plan
