#include "zerodp/common/shard.h"

#include <algorithm>

#include "zerodp/common/error.h"

namespace zerodp {

Shard shard_of(std::uint64_t n, int ranks, int rank) {
  ZERODP_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  const auto N = static_cast<std::uint64_t>(ranks);
  Shard s;
  s.capacity = (n + N - 1) / N;
  s.offset = std::min(n, s.capacity * static_cast<std::uint64_t>(rank));
  s.size = std::min(s.capacity, n - s.offset);
  return s;
}

}  // namespace zerodp
