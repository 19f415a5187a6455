#include "zerodp/plan/frozen.h"

#include <limits>

#include "zerodp/common/error.h"

namespace zerodp::plan {
namespace {

using u128 = unsigned __int128;

std::uint64_t saturated_frozen(u128 v) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  return v > kMax ? kMax : static_cast<std::uint64_t>(v);
}

}  // namespace

u128 frozen_bytes_wide(std::span<const FrozenPart> parts, u128 ranks, Stage stage) {
  ZERODP_CHECK(ranks >= 1);
  const bool sharded = sharding(stage).parameters;
  u128 bytes = 0;
  for (const FrozenPart& p : parts) {
    const u128 held = sharded && p.shardable ? (u128(p.elements) + ranks - 1) / ranks : p.elements;
    bytes += held * p.bytes;
  }
  return bytes;
}

std::uint64_t frozen_bytes(std::span<const FrozenPart> parts, int ranks, Stage stage) {
  ZERODP_CHECK(ranks >= 1);
  return saturated_frozen(frozen_bytes_wide(parts, static_cast<unsigned>(ranks), stage));
}

std::uint64_t frozen_floor_bytes(std::span<const FrozenPart> parts, Stage stage) {
  const bool sharded = sharding(stage).parameters;
  u128 bytes = 0;
  for (const FrozenPart& p : parts) {
    if (!(sharded && p.shardable)) bytes += u128(p.elements) * p.bytes;
  }
  return saturated_frozen(bytes);
}

std::uint64_t frozen_total_bytes(std::span<const FrozenPart> parts) {
  return saturated_frozen(frozen_bytes_wide(parts, 1, Stage::dp));
}

std::uint64_t frozen_elements(std::span<const FrozenPart> parts) {
  u128 n = 0;
  for (const FrozenPart& p : parts) n += p.elements;
  return saturated_frozen(n);
}

}  // namespace zerodp::plan
