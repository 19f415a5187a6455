#include "zerodp/plan/feasibility.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "zerodp/common/error.h"

namespace zerodp::plan {
namespace {

using u128 = unsigned __int128;
constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();

// model_state_bytes() for any Φ < 2^64 without its 64-bit precondition: the inverse search
// probes models far larger than any that would be planned.
u128 state_bytes_wide(u128 params, u128 ranks, const StageSplit& split) {
  return split.replicated * params + split.sharded * ((params + ranks - 1) / ranks);
}

// The largest x in [lo, hi] with bytes(x) <= budget, for bytes increasing on [lo, hi]; nullopt
// when not even lo fits.
template <typename Bytes>
std::optional<u128> largest_fitting(u128 lo, u128 hi, std::uint64_t budget, const Bytes& bytes) {
  if (lo > hi || bytes(lo) > budget) return std::nullopt;
  while (lo < hi) {
    const u128 mid = lo + (hi - lo + 1) / 2;
    if (bytes(mid) <= budget) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// The least N for a K that is not a whole number of bytes an element (an 8-bit optimizer's):
// its bytes grow with the shard on each side of the size rule (under it, the state is 32-bit
// and larger), so the largest fitting shard is looked for above the rule, then below it.
std::optional<std::uint64_t> min_gpus_blockwise(std::uint64_t params, Stage stage,
                                                const BytesPerParam& bpp, std::uint64_t budget,
                                                std::uint64_t round_to) {
  const auto bytes = [&](u128 shard) { return state_bytes_at_shard(params, shard, stage, bpp); };
  const auto round = [round_to](u128 n) { return (n + round_to - 1) / round_to * round_to; };
  const Sharding s = sharding(stage);
  if (params == 0 || !(s.optimizer_states || s.gradients || s.parameters)) {
    if (bytes(params) > budget || round(1) > kMax64) return std::nullopt;
    return static_cast<std::uint64_t>(round(1));
  }
  const u128 rule = bpp.small_below;  // shards of [1, rule) are under the size rule
  for (const auto& [lo, hi] : {std::pair<u128, u128>{std::max<u128>(rule, 1), params},
                               std::pair<u128, u128>{1, std::min<u128>(rule, params + 1) - 1}}) {
    const std::optional<u128> shard = largest_fitting(lo, hi, budget, bytes);
    if (!shard) continue;
    // ceil(Φ/N) <= shard for every N >= ceil(Φ/shard); rounded up to round_to, the shard
    // only shrinks, which may take it under the rule: then it is checked again.
    const u128 n = round((params + *shard - 1) / *shard);
    if (n > kMax64) return std::nullopt;
    if (bytes((params + n - 1) / n) <= budget) return static_cast<std::uint64_t>(n);
  }
  return std::nullopt;
}

}  // namespace

bool fits(std::uint64_t params, int ranks, Stage stage, const BytesPerParam& bpp,
          std::uint64_t budget) {
  return model_state_bytes(params, ranks, stage, bpp) <= budget;
}

std::optional<std::uint64_t> min_gpus(std::uint64_t params, Stage stage, const BytesPerParam& bpp,
                                      std::uint64_t budget, std::uint64_t round_to) {
  ZERODP_CHECK(round_to >= 1);
  if (!bpp.per_element()) return min_gpus_blockwise(params, stage, bpp, budget, round_to);
  const StageSplit split = stage_split(stage, bpp);
  const u128 replicated = u128(split.replicated) * params;
  if (replicated > budget) return std::nullopt;  // the floor alone exceeds the budget
  std::uint64_t n = 1;
  if (split.sharded > 0) {
    // ceil(Φ/N) elements per rank must fit in what the replicated part leaves:
    // ceil(Φ/N) <= c  <=>  Φ/N <= c  <=>  N >= Φ/c, so the least N is ceil(Φ/c).
    const std::uint64_t c = static_cast<std::uint64_t>((budget - replicated) / split.sharded);
    if (c == 0) return std::nullopt;
    n = params / c + (params % c != 0);
    if (n == 0) n = 1;  // Φ = 0 fits anywhere
  }
  const u128 rounded = (u128(n) + round_to - 1) / round_to * round_to;
  if (rounded > kMax64) return std::nullopt;
  return static_cast<std::uint64_t>(rounded);
}

std::uint64_t max_params(int ranks, Stage stage, const BytesPerParam& bpp, std::uint64_t budget) {
  ZERODP_CHECK(ranks >= 1);
  const StageSplit split = stage_split(stage, bpp);
  // Nothing of the model state on the GPU (all of it offloaded): the GPU sets no bound.
  if (split.replicated + split.sharded == 0) return kMax64;
  if (!bpp.per_element()) {
    // The state grows with Φ on each side of the point where K's partition reaches the size
    // rule (Φ itself when K is whole on every rank, its shard when K is sharded): the largest
    // fitting Φ is looked for above that point, then below it.
    const u128 n = static_cast<unsigned>(ranks);
    const auto bytes = [&](u128 params) {
      return state_bytes_at_shard(params, (params + n - 1) / n, stage, bpp);
    };
    const u128 rule = bpp.small_below;
    const u128 point = rule == 0 ? 0 : sharding(stage).optimizer_states ? n * (rule - 1) + 1 : rule;
    if (const auto above = largest_fitting(point, kMax64, budget, bytes)) {
      return static_cast<std::uint64_t>(*above);
    }
    if (point == 0) return 0;
    return static_cast<std::uint64_t>(largest_fitting(0, point - 1, budget, bytes).value_or(0));
  }
  // The state grows with Φ, so the largest fitting Φ is found by bisection on exact bytes.
  u128 lo = 0, hi = kMax64;  // state(lo) fits; look for the last Φ in [lo, hi] that does
  while (lo < hi) {
    const u128 mid = lo + (hi - lo + 1) / 2;
    if (state_bytes_wide(mid, static_cast<unsigned>(ranks), split) <= budget) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return static_cast<std::uint64_t>(lo);
}

}  // namespace zerodp::plan
