// The ring column must be what a real ring sends: these tests run a ring, with data, and
// count the bytes each rank sends.
#include "zerodp/plan/comm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "zerodp/common/shard.h"

namespace zerodp::plan {
namespace {

// N ranks, each with a buffer of n values; rank r sends only to rank r+1, one shard_of()
// chunk per step, and all ranks send at once (messages are taken before any is applied).
class SimulatedRing {
 public:
  SimulatedRing(std::size_t n, int ranks) : n_(n), ranks_(ranks), sent_(ranks, 0) {
    for (int r = 0; r < ranks; ++r) {
      buffers_.emplace_back(n);
      for (std::size_t i = 0; i < n; ++i) buffers_[r][i] = double(1 + r) * 1000 + double(i);
    }
  }

  // Reduce-scatter: chunk (r−k−1) mod N at step k, so rank r ends owning chunk r reduced.
  void reduce_scatter(std::uint64_t element_bytes) {
    for (int k = 0; k + 1 < ranks_; ++k) {
      step(
          element_bytes, [&](int r) { return mod(r - k - 1); },
          [](double& to, double from) { to += from; });
    }
  }

  // All-gather: chunk (r−k) mod N at step k: its own chunk first, then the one just received.
  void all_gather(std::uint64_t element_bytes) {
    for (int k = 0; k + 1 < ranks_; ++k) {
      step(
          element_bytes, [&](int r) { return mod(r - k); },
          [](double& to, double from) { to = from; });
    }
  }

  const std::vector<std::uint64_t>& sent() const { return sent_; }
  const std::vector<double>& buffer(int r) const { return buffers_[r]; }

 private:
  int mod(int c) const { return ((c % ranks_) + ranks_) % ranks_; }

  template <typename Chunk, typename Apply>
  void step(std::uint64_t element_bytes, Chunk chunk_of, Apply apply) {
    std::vector<std::vector<double>> messages(ranks_);
    for (int r = 0; r < ranks_; ++r) {
      const Shard c = shard_of(n_, ranks_, chunk_of(r));
      messages[r].assign(buffers_[r].begin() + c.offset, buffers_[r].begin() + c.offset + c.size);
      sent_[r] += c.size * element_bytes;
    }
    for (int r = 0; r < ranks_; ++r) {
      const Shard c = shard_of(n_, ranks_, chunk_of(r));
      auto& to = buffers_[(r + 1) % ranks_];
      for (std::size_t i = 0; i < c.size; ++i) apply(to[c.offset + i], messages[r][i]);
    }
  }

  std::size_t n_;
  int ranks_;
  std::vector<std::vector<double>> buffers_;
  std::vector<std::uint64_t> sent_;
};

TEST(SimulatedRing, AllReduceReallyReduces) {
  // The simulation is a ring only if it computes the sum; check that before trusting its counts.
  for (std::size_t n : {1u, 5u, 10u, 13u}) {
    for (int ranks : {1, 2, 3, 4, 7}) {
      SimulatedRing ring(n, ranks);
      ring.reduce_scatter(1);
      for (int r = 0; r < ranks; ++r) {  // rank r owns chunk r, fully reduced
        const Shard c = shard_of(n, ranks, r);
        for (std::size_t i = c.offset; i < c.offset + c.size; ++i) {
          const double sum = 1000.0 * ranks * (ranks + 1) / 2 + double(i) * ranks;
          ASSERT_EQ(ring.buffer(r)[i], sum) << "n=" << n << " N=" << ranks << " r=" << r;
        }
      }
      ring.all_gather(1);
      for (int r = 0; r < ranks; ++r) {
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(ring.buffer(r)[i], 1000.0 * ranks * (ranks + 1) / 2 + double(i) * ranks);
        }
      }
    }
  }
}

TEST(RingColumn, EachCollectiveMatchesTheSimulationPerRank) {
  for (std::size_t n : {0u, 1u, 2u, 5u, 10u, 13u, 64u, 97u}) {
    for (int ranks = 1; ranks <= 9; ++ranks) {
      SimulatedRing rs(n, ranks), ag(n, ranks), ar(n, ranks);
      rs.reduce_scatter(2);
      ag.all_gather(4);
      ar.reduce_scatter(2);
      ar.all_gather(2);
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(ring_bytes_sent(Collective::reduce_scatter, n, 2, ranks, r), rs.sent()[r]);
        EXPECT_EQ(ring_bytes_sent(Collective::all_gather, n, 4, ranks, r), ag.sent()[r]);
        EXPECT_EQ(ring_bytes_sent(Collective::all_reduce, n, 2, ranks, r), ar.sent()[r]);
      }
    }
  }
}

// One training step of `stage` on the simulated ring, as plan/comm.h describes it.
std::vector<std::uint64_t> simulate_step(Stage stage, std::size_t n, const BytesPerParam& b,
                                         int ranks) {
  SimulatedRing ring(n, ranks);
  switch (stage) {
    case Stage::dp:
      ring.reduce_scatter(b.grads), ring.all_gather(b.grads);
      break;
    case Stage::zero1:
    case Stage::zero2:
      ring.reduce_scatter(b.grads), ring.all_gather(b.params);
      break;
    case Stage::zero3:
      ring.all_gather(b.params);  // forward
      ring.all_gather(b.params);  // backward
      ring.reduce_scatter(b.grads);
      break;
  }
  return ring.sent();
}

TEST(RingColumn, StepBytesEqualTheSimulatedRingForSmallNAndOddSizes) {
  // {2, 4, 12}: grads wider than params, where the busiest rank is the wrap-around one.
  for (const BytesPerParam& b : {BytesPerParam{2, 2, 12}, BytesPerParam{4, 4, 8},
                                 BytesPerParam{2, 4, 12}, BytesPerParam{4, 2, 12}}) {
    for (std::size_t n : {1u, 2u, 3u, 5u, 7u, 10u, 13u, 31u, 100u, 101u}) {
      for (int ranks = 1; ranks <= 9; ++ranks) {
        for (Stage s : kStages) {
          const auto sent = simulate_step(s, n, b, ranks);
          for (int r = 0; r < ranks; ++r) ASSERT_EQ(ring_step_bytes(s, n, b, ranks, r), sent[r]);
          ASSERT_EQ(ring_step_bytes(s, n, b, ranks), *std::max_element(sent.begin(), sent.end()))
              << "n=" << n << " N=" << ranks << " stage " << int(s) << " P=" << b.params
              << " G=" << b.grads;
        }
      }
    }
  }
}

TEST(RingColumn, ClosedFormsWhenNDivides) {
  const BytesPerParam b{};
  const std::uint64_t phi = 1'000'000'000;
  for (int n : {2, 4, 8, 64}) {
    EXPECT_EQ(ring_step_bytes(Stage::dp, phi, b, n), 4 * phi * (n - 1) / n);
    EXPECT_EQ(ring_step_bytes(Stage::zero1, phi, b, n), 4 * phi * (n - 1) / n);
    EXPECT_EQ(ring_step_bytes(Stage::zero2, phi, b, n), 4 * phi * (n - 1) / n);
    EXPECT_EQ(ring_step_bytes(Stage::zero3, phi, b, n), 6 * phi * (n - 1) / n);
  }
  // fp32 params and grads: the ring volume doubles.
  const BytesPerParam fp32{4, 4, 8};
  for (Stage s : kStages) {
    EXPECT_EQ(ring_step_bytes(s, phi, fp32, 8), 2 * ring_step_bytes(s, phi, b, 8));
  }
  for (Stage s : kStages) EXPECT_EQ(ring_step_bytes(s, phi, b, 1), 0u);
}

TEST(SeedColumn, FormulaScaledByTheWidthOfParamsAndGrads) {
  const BytesPerParam b{};
  const std::uint64_t phi = 1'000'000'000;
  EXPECT_EQ(seed_step_bytes(Stage::dp, phi, b, 8), 1'750'000'000u);  // 2Φ·7/8
  EXPECT_EQ(seed_step_bytes(Stage::zero1, phi, b, 8), 1'750'000'000u);
  EXPECT_EQ(seed_step_bytes(Stage::zero2, phi, b, 8), 1'750'000'000u);
  EXPECT_EQ(seed_step_bytes(Stage::zero3, phi, b, 8), 5'250'000'000u);  // 6Φ·7/8
  EXPECT_EQ(seed_step_bytes(Stage::zero3, phi, b, 8, Directions::both), 10'500'000'000u);
  EXPECT_EQ(seed_step_bytes(Stage::dp, phi, BytesPerParam{4, 4, 8}, 8), 3'500'000'000u);
  EXPECT_EQ(seed_step_bytes(Stage::dp, phi, b, 1), 0u);
  // Rounded to the nearest byte: 2·10·2/3 = 13.33 → 13.
  EXPECT_EQ(seed_step_bytes(Stage::dp, 10, b, 3), 13u);
}

}  // namespace
}  // namespace zerodp::plan
