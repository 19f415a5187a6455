// Counts in 64 bits that saturate at 2^64 − 1 rather than wrap: a model's sizes multiplied
// out, or bytes summed in 128 bits and brought back. A saturated count is larger than any
// memory, so the planner's checks refuse it where a wrapped one would pass as small.
//
// Contract: pure; every result is the exact value when it fits 64 bits, else 2^64 − 1.
#pragma once

#include <cstdint>
#include <limits>

namespace zerodp {

inline constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();

inline std::uint64_t saturated(unsigned __int128 v) {
  return v > kSaturated ? kSaturated : static_cast<std::uint64_t>(v);
}
inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > kSaturated - b ? kSaturated : a + b;
}
inline std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > kSaturated / b ? kSaturated : a * b;
}

}  // namespace zerodp
