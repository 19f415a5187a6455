#include "zerodp/plan/feasibility.h"

#include <limits>

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

}  // namespace

bool fits(std::uint64_t params, int ranks, Stage stage, const BytesPerParam& bpp,
          std::uint64_t budget) {
  return model_state_bytes(params, ranks, stage, bpp) <= budget;
}

std::optional<std::uint64_t> min_gpus(std::uint64_t params, Stage stage, const BytesPerParam& bpp,
                                      std::uint64_t budget, std::uint64_t round_to) {
  ZERODP_CHECK(round_to >= 1);
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
