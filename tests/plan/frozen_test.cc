// A frozen base beside the trained parameters (plan/frozen.h): held as P is, sharded only at
// ZeRO-3, gathered only there; checked by hand on small numbers and against a rank-by-rank
// count of the ring.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "zerodp/plan/comm.h"
#include "zerodp/plan/frozen.h"

namespace zerodp::plan {
namespace frozen_test {

// A QLoRA-like base: 1,001 one-byte codes, 70 bytes of quantization state kept whole, 13 16-bit
// weights left unquantized.
const std::vector<FrozenPart> kBase = {
    {"NF4 codes", 1001, 1, true}, {"state", 70, 1, false}, {"16-bit", 13, 2, true}};

TEST(Frozen, WholeBelowZeroThreeAndShardedByCeilingAtIt) {
  for (Stage stage : {Stage::dp, Stage::zero1, Stage::zero2}) {
    EXPECT_EQ(frozen_bytes(kBase, 8, stage), 1001u + 70 + 26) << stage_name(stage);
    EXPECT_EQ(frozen_floor_bytes(kBase, stage), 1001u + 70 + 26);
  }
  // ceil(1001/8) = 126 codes, the state whole, ceil(13/8) = 2 weights of 2 bytes.
  EXPECT_EQ(frozen_bytes(kBase, 8, Stage::zero3), 126u + 70 + 4);
  EXPECT_EQ(frozen_bytes(kBase, 1, Stage::zero3), 1001u + 70 + 26);
  EXPECT_EQ(frozen_floor_bytes(kBase, Stage::zero3), 70u);
  EXPECT_EQ(frozen_total_bytes(kBase), 1097u);
  EXPECT_EQ(frozen_elements(kBase), 1084u);
  // Far beyond any int N: one element a rank.
  EXPECT_EQ(frozen_bytes_wide(kBase, (unsigned __int128)1 << 70, Stage::zero3), 1u + 70 + 2);
  // Saturates rather than wraps.
  const std::vector<FrozenPart> huge = {{"a", ~0ull, 2, true}};
  EXPECT_EQ(frozen_bytes(huge, 1, Stage::dp), ~0ull);
}

TEST(Frozen, OnlyZeroThreeSendsTheBaseTwiceAStep) {
  const BytesPerParam bpp{2, 2, 12};
  const std::uint64_t trained = 4099;
  for (int n : {1, 2, 3, 7, 8}) {
    for (Stage stage : {Stage::dp, Stage::zero1, Stage::zero2}) {
      EXPECT_EQ(ring_step_bytes(stage, trained, bpp, n, kBase),
                ring_step_bytes(stage, trained, bpp, n));
      EXPECT_EQ(seed_step_bytes(stage, trained, bpp, n, Directions::one, kBase),
                seed_step_bytes(stage, trained, bpp, n));
    }
    // The busiest rank, counted rank by rank: the trained buffer's collectives and two
    // all-gathers of each shardable part.
    std::uint64_t busiest = 0;
    for (int r = 0; r < n; ++r) {
      std::uint64_t sent = ring_step_bytes(Stage::zero3, trained, bpp, n, r);
      for (const FrozenPart& p : kBase) {
        if (p.shardable)
          sent += 2 * ring_bytes_sent(Collective::all_gather, p.elements, p.bytes, n, r);
      }
      busiest = std::max(busiest, sent);
    }
    EXPECT_EQ(ring_step_bytes(Stage::zero3, trained, bpp, n, kBase), busiest) << n;
    // Seed: ((2P + G)·Φ + 2·(1001 + 26))·(N−1)/N, rounded once.
    const std::uint64_t payload = 6 * trained + 2 * (1001 + 26);
    EXPECT_EQ(seed_step_bytes(Stage::zero3, trained, bpp, n, Directions::one, kBase),
              (payload * (n - 1) + n / 2) / n)
        << n;
    EXPECT_EQ(seed_step_bytes(Stage::zero3, trained, bpp, n, Directions::both, kBase),
              (2 * payload * (n - 1) + n / 2) / n)
        << n;
  }
}

}  // namespace frozen_test
}  // namespace zerodp::plan
