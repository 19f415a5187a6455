// Counts that saturate at 2^64 - 1 rather than wrap: a model's sizes multiplied out, which the
// planner's own checks then refuse when no plan can hold them. Internal to the catalogue.
#pragma once

#include <cstdint>

namespace zerodp::catalog {

inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
inline std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

}  // namespace zerodp::catalog
