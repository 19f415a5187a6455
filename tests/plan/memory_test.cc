#include "zerodp/plan/memory.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "zerodp/common/error.h"
#include "zerodp/common/shard.h"

namespace zerodp::plan {
namespace {

const std::vector<std::uint64_t> kParams = {
    1, 2, 3, 7, 13, 97, 1000, 1'000'003, 50'000'000, 1'000'000'000, 7'500'000'007, 175'000'000'000};
const std::vector<BytesPerParam> kBytes = {{2, 2, 12}, {4, 4, 8}, {2, 2, 8}, {2, 2, 4},
                                           {4, 4, 4},  {4, 4, 0}, {2, 4, 12}};

TEST(BytesPerParam, ThePublishedAccounting) {
  EXPECT_EQ(bytes_per_param(Precision::fp16, Optimizer::adam), (BytesPerParam{2, 2, 12}));
  EXPECT_EQ(bytes_per_param(Precision::bf16, Optimizer::adam), (BytesPerParam{2, 2, 12}));
  EXPECT_EQ(bytes_per_param(Precision::fp32, Optimizer::adam), (BytesPerParam{4, 4, 8}));
  EXPECT_EQ(bytes_per_param(Precision::fp16, Optimizer::sgd_momentum), (BytesPerParam{2, 2, 8}));
  EXPECT_EQ(bytes_per_param(Precision::bf16, Optimizer::sgd), (BytesPerParam{2, 2, 4}));
  EXPECT_EQ(bytes_per_param(Precision::fp32, Optimizer::sgd_momentum), (BytesPerParam{4, 4, 4}));
  EXPECT_EQ(bytes_per_param(Precision::fp32, Optimizer::sgd), (BytesPerParam{4, 4, 0}));
  EXPECT_EQ(BytesPerParam{}.total(), 16u);  // the default is the seed's
}

TEST(MemoryModel, AllStagesEqualAtOneGpu) {
  for (const BytesPerParam& b : kBytes) {
    for (std::uint64_t phi : kParams) {
      for (Stage s : kStages) EXPECT_EQ(model_state_bytes(phi, 1, s, b), b.total() * phi);
    }
  }
}

TEST(MemoryModel, EachStageIsMonotoneNonIncreasingInN) {
  for (const BytesPerParam& b : kBytes) {
    for (std::uint64_t phi : kParams) {
      for (Stage s : kStages) {
        std::uint64_t previous = model_state_bytes(phi, 1, s, b);
        for (int n = 2; n <= 300; ++n) {
          const std::uint64_t now = model_state_bytes(phi, n, s, b);
          ASSERT_LE(now, previous) << "phi=" << phi << " N=" << n << " stage " << int(s);
          previous = now;
        }
      }
    }
  }
}

TEST(MemoryModel, StagesAreOrderedAtEveryN) {
  // Each stage shards a superset of the previous one's blocks, so it never holds more.
  for (const BytesPerParam& b : kBytes) {
    for (std::uint64_t phi : kParams) {
      for (int n : {1, 2, 3, 8, 47, 64, 1000}) {
        for (int s = 1; s < 4; ++s) {
          EXPECT_LE(model_state_bytes(phi, n, Stage(s), b),
                    model_state_bytes(phi, n, Stage(s - 1), b));
        }
      }
    }
  }
}

TEST(MemoryModel, FloorsAreApproachedButNeverCrossed) {
  for (const BytesPerParam& b : kBytes) {
    for (std::uint64_t phi : kParams) {
      for (Stage s : kStages) {
        const std::uint64_t floor = floor_bytes(phi, s, b);
        const StageSplit split = stage_split(s, b);
        for (int n : {1, 2, 7, 64, 4096, 1 << 20, std::numeric_limits<int>::max()}) {
          const std::uint64_t m = model_state_bytes(phi, n, s, b);
          EXPECT_GE(m, floor);
          // What is left above the floor is one shard: at most sharded·(Φ/N + 1) bytes.
          EXPECT_LE(m - floor, split.sharded * (phi / n + 1));
        }
        // Once every rank holds one element, the floor is one element away.
        if (phi <= static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
          EXPECT_EQ(model_state_bytes(phi, static_cast<int>(phi), s, b), floor + split.sharded);
        }
      }
    }
  }
}

TEST(MemoryModel, ExactWhenNDividesAndPaddedToWholeElementsOtherwise) {
  const BytesPerParam b{};
  EXPECT_EQ(model_state_bytes(1'000'000'000, 8, Stage::zero1, b),
            4'000'000'000ull + 1'500'000'000ull);
  // Φ = 10, N = 4: shards of 3, 3, 3, 1; every rank allocates the capacity, 3 elements.
  EXPECT_EQ(shard_of(10, 4, 0).capacity, 3u);
  EXPECT_EQ(model_state_bytes(10, 4, Stage::zero3, b), 16u * 3);
  EXPECT_EQ(model_state_bytes(10, 4, Stage::zero2, b), 2u * 10 + 14u * 3);
  // Padding costs less than one element per sharded state over the exact quotient.
  for (std::uint64_t phi : kParams) {
    for (int n : {3, 7, 46, 47}) {
      const unsigned __int128 exact_times_n = (unsigned __int128)16 * phi;  // 16Φ/N · N
      const unsigned __int128 padded_times_n =
          (unsigned __int128)model_state_bytes(phi, n, Stage::zero3, b) * n;
      EXPECT_GE(padded_times_n, exact_times_n);
      EXPECT_LT(padded_times_n - exact_times_n, (unsigned __int128)16 * n);
    }
  }
}

TEST(MemoryModel, SixtyFourBitLimitIsCheckedExactly) {
  const BytesPerParam b{};  // 16 bytes: the largest Φ is floor((2^64 − 1) / 16)
  const std::uint64_t largest = std::numeric_limits<std::uint64_t>::max() / 16;
  EXPECT_NO_THROW(check_fits_in_64_bits(largest, b));
  EXPECT_EQ(model_state_bytes(largest, 1, Stage::dp, b), largest * 16);
  EXPECT_THROW(check_fits_in_64_bits(largest + 1, b), UsageError);
  EXPECT_THROW(check_fits_in_64_bits(2'000'000'000'000'000'000ull, b), UsageError);
  try {
    check_fits_in_64_bits(2'000'000'000'000'000'000ull, b);
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("params: ", 0), 0u) << e.what();
  }
  // fp32 SGD holds 8 bytes/param but the seed's two-direction ZeRO-3 volume is 24Φ.
  const BytesPerParam sgd{4, 4, 0};
  EXPECT_THROW(check_fits_in_64_bits(largest * 16 / 20, sgd), UsageError);
  EXPECT_THROW(check_fits_in_64_bits(1, BytesPerParam{0, 2, 12}), UsageError);
}

// An 8-bit K: each partition's elements at K bytes, one block's absmax per 256 elements or
// part of them, and a partition under 4,096 elements in 32 bits.
TEST(MemoryModel, AnEightBitOptimizerCountsItsBlocksAndItsSizeRule) {
  const BytesPerParam b = bytes_per_param(Precision::bf16, Optimizer::adam_8bit);
  EXPECT_FALSE(b.per_element());
  EXPECT_EQ(b.optimizer_bytes(0), 0u);
  EXPECT_EQ(b.optimizer_bytes(1), 12u);  // 32-bit: master 4, m 4, v 4
  EXPECT_EQ(b.optimizer_bytes(4095), 12u * 4095);
  EXPECT_EQ(b.optimizer_bytes(4096), 6u * 4096 + 16 * 8);
  EXPECT_EQ(b.optimizer_bytes(4097), 6u * 4097 + 17 * 8);
  // The seed's Example 8 with 8-bit AdamW: Φ = 1e10 on 4 GPUs.
  const auto blocks = [](std::uint64_t n) { return (n + 255) / 256; };
  const std::uint64_t phi = 10'000'000'000;
  EXPECT_EQ(model_state_bytes(phi, 1, Stage::dp, b), 10 * phi + blocks(phi) * 8);
  EXPECT_EQ(model_state_bytes(phi, 4, Stage::dp, b), 10 * phi + blocks(phi) * 8);
  EXPECT_EQ(model_state_bytes(phi, 4, Stage::zero1, b),
            4 * phi + 6 * (phi / 4) + blocks(phi / 4) * 8);
  EXPECT_EQ(model_state_bytes(phi, 4, Stage::zero3, b), 25'078'125'000u);
  // A replicated K keeps its blocks at any N; a sharded one's vanish with the shard.
  EXPECT_EQ(floor_bytes(phi, Stage::dp, b), model_state_bytes(phi, 4, Stage::dp, b));
  EXPECT_EQ(floor_bytes(phi, Stage::zero1, b), 4 * phi);
  EXPECT_EQ(floor_bytes(phi, Stage::zero3, b), 0u);
  // A shard of 3 elements is under the size rule: 32-bit state.
  EXPECT_EQ(model_state_bytes(1000, 400, Stage::zero3, b), 2u * 3 + 2 * 3 + 12 * 3);
}

}  // namespace
}  // namespace zerodp::plan
