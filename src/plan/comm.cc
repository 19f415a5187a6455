#include "zerodp/plan/comm.h"

#include <algorithm>
#include <limits>

#include "zerodp/common/error.h"
#include "zerodp/common/shard.h"

namespace zerodp::plan {
namespace {

using u128 = unsigned __int128;

std::uint64_t chunk(std::uint64_t elements, int ranks, int c) {
  return shard_of(elements, ranks, c).size;
}

// How many times a step runs each ring collective, and over elements of how many bytes:
// a reduce-scatter of `rs_bytes` elements and `ag_count` all-gathers of `ag_bytes` elements.
struct StepCollectives {
  std::uint64_t rs_bytes;
  std::uint64_t ag_bytes;
  std::uint64_t ag_count;
};

StepCollectives step_collectives(Stage stage, const BytesPerParam& bpp) {
  const Sharding s = sharding(stage);
  // Unsharded optimizer states: every rank updates all params, so the grads are all-reduced.
  // Sharded: grads are scattered and the updated params gathered, once; sharded params are
  // gathered for forward and again for backward.
  if (!s.optimizer_states) return {bpp.grads, bpp.grads, 1};
  return {bpp.grads, bpp.params, s.parameters ? 2u : 1u};
}

}  // namespace

std::uint64_t ring_bytes_sent(Collective collective, std::uint64_t elements,
                              std::uint64_t element_bytes, int ranks, int rank) {
  ZERODP_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  if (ranks == 1) return 0;
  // Every chunk but the own one (reduce-scatter) or but the next rank's one (all-gather).
  const std::uint64_t scatter = elements - chunk(elements, ranks, rank);
  const std::uint64_t gather = elements - chunk(elements, ranks, (rank + 1) % ranks);
  switch (collective) {
    case Collective::reduce_scatter:
      return element_bytes * scatter;
    case Collective::all_gather:
      return element_bytes * gather;
    case Collective::all_reduce:
      return element_bytes * (scatter + gather);
  }
  ZERODP_CHECK(false);
}

std::uint64_t ring_step_bytes(Stage stage, std::uint64_t params, const BytesPerParam& bpp,
                              int ranks, int rank) {
  ZERODP_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  const StepCollectives s = step_collectives(stage, bpp);
  return ring_bytes_sent(Collective::reduce_scatter, params, s.rs_bytes, ranks, rank) +
         s.ag_count * ring_bytes_sent(Collective::all_gather, params, s.ag_bytes, ranks, rank);
}

std::uint64_t ring_step_bytes(Stage stage, std::uint64_t params, const BytesPerParam& bpp,
                              int ranks) {
  ZERODP_CHECK(ranks >= 1);
  if (ranks == 1) return 0;
  // Rank r sends rs·(Φ − chunk r) + ag·(Φ − chunk r+1), so the busiest rank minimises
  // rs·chunk(r) + ag·chunk(r+1). Chunk sizes never grow with r, so over r = 0..N−2 that sum
  // is smallest at r = N−2; the only other candidate is the wrap-around r = N−1.
  return std::max(ring_step_bytes(stage, params, bpp, ranks, ranks - 2),
                  ring_step_bytes(stage, params, bpp, ranks, ranks - 1));
}

std::uint64_t seed_step_bytes(Stage stage, std::uint64_t params, const BytesPerParam& bpp,
                              int ranks, Directions directions) {
  return seed_step_bytes(stage, params, bpp, ranks, directions, {});
}

std::uint64_t ring_step_bytes(Stage stage, std::uint64_t params, const BytesPerParam& bpp,
                              int ranks, std::span<const FrozenPart> frozen) {
  ZERODP_CHECK(ranks >= 1);
  if (ranks == 1) return 0;
  // Every buffer's chunks shrink with r alike, so the busiest rank of the sum is, as for one
  // buffer, rank N−2 or the wrap-around N−1.
  const auto sent = [&](int rank) {
    u128 bytes = ring_step_bytes(stage, params, bpp, ranks, rank);
    if (sharding(stage).parameters) {
      for (const FrozenPart& p : frozen) {
        if (p.shardable) {
          bytes +=
              2 * u128(ring_bytes_sent(Collective::all_gather, p.elements, p.bytes, ranks, rank));
        }
      }
    }
    ZERODP_CHECK(bytes <= std::numeric_limits<std::uint64_t>::max());
    return static_cast<std::uint64_t>(bytes);
  };
  return std::max(sent(ranks - 2), sent(ranks - 1));
}

std::uint64_t seed_step_bytes(Stage stage, std::uint64_t params, const BytesPerParam& bpp,
                              int ranks, Directions directions,
                              std::span<const FrozenPart> frozen) {
  ZERODP_CHECK(ranks >= 1);
  const bool gathers = sharding(stage).parameters;
  const u128 payload = gathers ? 2 * u128(bpp.params) + bpp.grads : bpp.grads;
  u128 frozen_payload = 0;  // bytes, both gathers
  for (const FrozenPart& p : frozen) {
    if (gathers && p.shardable) frozen_payload += 2 * u128(p.bytes) * p.elements;
  }
  const u128 n = static_cast<unsigned>(ranks);
  const u128 numerator =
      (payload * params + frozen_payload) * (n - 1) * (directions == Directions::both ? 2u : 1u);
  const u128 bytes = (numerator + n / 2) / n;  // to the nearest byte
  ZERODP_CHECK(bytes <= std::numeric_limits<std::uint64_t>::max());
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace zerodp::plan
