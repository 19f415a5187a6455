// Feasibility (cell E of the seed): does a stage fit a per-GPU budget, with how few GPUs,
// and how large a model fits on a given number of GPUs.
//
// Contract:
//  - "Fits" means model_state_bytes() <= budget, where the budget is what a GPU leaves for
//    model state (its memory minus the activations). Exact integer comparison of bytes: an
//    exact equality fits, one byte more does not; no division is ever rounded.
//  - The answers agree with model_state_bytes() (zerodp/plan/memory.h) at every N, so
//    min_gpus() fits and min_gpus() − 1 does not (before rounding to a node size).
//  - Because a rank holds whole elements, a sharded stage cannot go below
//    replicated·Φ + sharded·1 bytes (one element per rank, at N >= Φ); a budget under that
//    has no N, even when it is above the N → ∞ floor replicated·Φ.
//  - Pure functions; preconditions as in plan/memory.h.
#pragma once

#include <cstdint>
#include <optional>

#include "zerodp/plan/memory.h"

namespace zerodp::plan {

bool fits(std::uint64_t params, int ranks, Stage stage, const BytesPerParam& bpp,
          std::uint64_t budget);

// The smallest N >= 1 at which `stage` fits, rounded up to a multiple of `round_to` (a node
// size; 1 for none), or nullopt when no N fits. A stage that shards nothing (stage 0, or
// stage 1 with K = 0) fits at N = 1 or never. The result may exceed the int range that
// model_state_bytes() accepts; it is still the exact answer.
std::optional<std::uint64_t> min_gpus(std::uint64_t params, Stage stage, const BytesPerParam& bpp,
                                      std::uint64_t budget, std::uint64_t round_to = 1);

// The inverse: the largest Φ for which `stage` fits on `ranks` GPUs (0 when not even one
// parameter fits). Saturates at 2^64 − 1 parameters.
std::uint64_t max_params(int ranks, Stage stage, const BytesPerParam& bpp, std::uint64_t budget);

}  // namespace zerodp::plan
