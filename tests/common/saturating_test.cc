// Counts that saturate rather than wrap: exact below 2^64, 2^64 − 1 at and beyond it.
#include "zerodp/common/saturating.h"

#include <gtest/gtest.h>

namespace zerodp {
namespace {

constexpr std::uint64_t kTwo32 = std::uint64_t(1) << 32;

TEST(Saturating, ExactWhereTheValueFitsAndTheLargestCountBeyond) {
  EXPECT_EQ(saturating_mul(kTwo32 - 1, kTwo32 + 1), kSaturated);  // 2^64 − 1 exactly
  EXPECT_EQ(saturating_mul(kTwo32, kTwo32), kSaturated);          // 2^64 would wrap to 0
  EXPECT_EQ(saturating_mul(kTwo32, kTwo32 - 1), (kTwo32 - 1) << 32);
  EXPECT_EQ(saturating_mul(kSaturated, 0), 0u);
  EXPECT_EQ(saturating_mul(0, kSaturated), 0u);
  EXPECT_EQ(saturating_add(kSaturated - 5, 5), kSaturated);
  EXPECT_EQ(saturating_add(kSaturated - 5, 6), kSaturated);  // would wrap to 0
  EXPECT_EQ(saturating_add(kTwo32, kTwo32), kTwo32 << 1);
  const unsigned __int128 two64 = static_cast<unsigned __int128>(1) << 64;
  EXPECT_EQ(saturated(two64 - 1), kSaturated);
  EXPECT_EQ(saturated(two64), kSaturated);
  EXPECT_EQ(saturated(two64 * (two64 / 2)), kSaturated);  // 2^127
  EXPECT_EQ(saturated(12345), 12345u);
}

}  // namespace
}  // namespace zerodp
