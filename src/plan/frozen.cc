#include "zerodp/plan/frozen.h"

#include "zerodp/common/error.h"
#include "zerodp/common/saturating.h"

namespace zerodp::plan {

using u128 = unsigned __int128;

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
  return saturated(frozen_bytes_wide(parts, static_cast<unsigned>(ranks), stage));
}

std::uint64_t frozen_floor_bytes(std::span<const FrozenPart> parts, Stage stage) {
  const bool sharded = sharding(stage).parameters;
  u128 bytes = 0;
  for (const FrozenPart& p : parts) {
    if (!(sharded && p.shardable)) bytes += u128(p.elements) * p.bytes;
  }
  return saturated(bytes);
}

std::uint64_t frozen_total_bytes(std::span<const FrozenPart> parts) {
  return saturated(frozen_bytes_wide(parts, 1, Stage::dp));
}

std::uint64_t frozen_elements(std::span<const FrozenPart> parts) {
  u128 n = 0;
  for (const FrozenPart& p : parts) n += p.elements;
  return saturated(n);
}

}  // namespace zerodp::plan
