// The shard arithmetic: which part of a flat buffer of n elements each of N ranks owns.
//
// This is the one place that decides it; the communicator's chunks, the engine's optimizer
// shards and the planner's padding all call shard_of().
//
// Rule: every rank owns a capacity of ceil(n / N) elements. Rank r's shard starts at
// r * capacity and holds min(capacity, n - start) elements, clipped at zero; so the shards
// are contiguous, cover [0, n) exactly once, and only the trailing ranks can be short (or
// empty, when n < N). A rank that allocates its full capacity holds the "padding":
// capacity * N - n elements over all ranks, fewer than N.
#pragma once

#include <cstddef>

namespace zerodp {

struct Shard {
  std::size_t offset = 0;    // first element owned, in [0, n]
  std::size_t size = 0;      // elements owned, in [0, capacity]
  std::size_t capacity = 0;  // ceil(n / ranks): the same on every rank
};

// Requires ranks >= 1 and 0 <= rank < ranks.
Shard shard_of(std::size_t n, int ranks, int rank);

}  // namespace zerodp
