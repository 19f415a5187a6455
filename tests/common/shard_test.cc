#include "zerodp/common/shard.h"

#include <gtest/gtest.h>

#include <vector>

namespace zerodp {
namespace {

TEST(Shard, CoversTheBufferOnceInOrder) {
  for (std::size_t n : {0u, 1u, 2u, 3u, 7u, 10u, 97u, 1000u}) {
    for (int ranks : {1, 2, 3, 4, 7, 8, 16}) {
      std::size_t next = 0, capacity = 0;
      for (int r = 0; r < ranks; ++r) {
        Shard s = shard_of(n, ranks, r);
        if (r == 0) capacity = s.capacity;
        EXPECT_EQ(s.capacity, capacity);
        EXPECT_EQ(s.offset, next) << "n=" << n << " N=" << ranks << " r=" << r;
        EXPECT_LE(s.size, s.capacity);
        next += s.size;
      }
      EXPECT_EQ(next, n);
      EXPECT_EQ(capacity, (n + ranks - 1) / ranks);
      EXPECT_LT(capacity * ranks - n, static_cast<std::size_t>(ranks));  // padding < N
    }
  }
}

TEST(Shard, OnlyTrailingRanksAreShort) {
  // 10 over 4: capacity 3 -> 3, 3, 3, 1.
  std::vector<std::size_t> sizes;
  for (int r = 0; r < 4; ++r) sizes.push_back(shard_of(10, 4, r).size);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{3, 3, 3, 1}));
  // 2 over 4: capacity 1 -> 1, 1, 0, 0; empty shards sit at the end.
  EXPECT_EQ(shard_of(2, 4, 2).size, 0u);
  EXPECT_EQ(shard_of(2, 4, 3).offset, 2u);
}

}  // namespace
}  // namespace zerodp
