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
//
// Counts are 64-bit whatever the target: the planner asks for the shards of 10^11 parameters
// also where size_t is 32 bits (its WebAssembly build, docs/web.md). On 64-bit Linux
// std::uint64_t is std::uint64_t, so the engine indexes with these values unchanged.
#pragma once

#include <cstdint>

namespace zerodp {

struct Shard {
  std::uint64_t offset = 0;    // first element owned, in [0, n]
  std::uint64_t size = 0;      // elements owned, in [0, capacity]
  std::uint64_t capacity = 0;  // ceil(n / ranks): the same on every rank
};

// Requires ranks >= 1 and 0 <= rank < ranks.
Shard shard_of(std::uint64_t n, int ranks, int rank);

}  // namespace zerodp
