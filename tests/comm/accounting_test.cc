// Byte and call counters against the ring algorithms, derived here step by step (not from the
// closed form the backend uses).
#include <gtest/gtest.h>

#include <array>
#include <mutex>
#include <vector>

#include "comm/comm_testing.h"
#include "zerodp/comm/communicator.h"

namespace zerodp::comm {
namespace {

struct RingBytes {
  std::uint64_t reduce_scatter = 0, all_gather = 0, broadcast = 0;
};

// Walks the ring steps: at step s rank r sends chunk (r-1-s) mod N in the reduce-scatter and
// chunk (r-s) mod N in the all-gather; a chain broadcast forwards the buffer along the ring
// from the root, so every rank but the root's predecessor sends it once.
RingBytes walk_ring(std::size_t count, int ranks, int rank, int root, std::size_t elem) {
  auto chunk = [&](int j) { return shard_of(count, ranks, ((j % ranks) + ranks) % ranks).size; };
  RingBytes b;
  for (int s = 0; s < ranks - 1; ++s) {
    b.reduce_scatter += chunk(rank - 1 - s) * elem;
    b.all_gather += chunk(rank - s) * elem;
  }
  for (int hop = 0, at = root; hop < ranks - 1; ++hop, at = (at + 1) % ranks) {
    if (at == rank) b.broadcast += count * elem;
  }
  return b;
}

TEST(CommAccounting, BytesAreTheRingFigures) {
  for (int ranks : {1, 2, 3, 4, 7, 8}) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t(ranks - 1),
                              std::size_t{10}, std::size_t{100003}}) {
      for (DType dtype : {DType::f32, DType::bf16}) {
        const int root = ranks / 2;
        run_thread_ranks(ranks, {}, [&](Communicator& comm) {
          const int r = comm.rank();
          const Shard c = shard_of(count, ranks, r);
          testing::Buffer full(dtype, count), out(dtype, count);
          comm.all_reduce(full.data(), count, dtype);
          comm.reduce_scatter(full.data(), out.data(), count, dtype);
          comm.all_gather(full.at(c.offset), out.data(), count, dtype);
          comm.all_gather(full.at(c.offset), out.data(), count, dtype);
          comm.broadcast(full.data(), count, dtype, root);
          comm.barrier();

          const RingBytes want = walk_ring(count, ranks, r, root, dtype_size(dtype));
          const Stats s = comm.stats();
          const auto trace = "N=" + std::to_string(ranks) + " count=" + std::to_string(count) +
                             " rank " + std::to_string(r);
          EXPECT_EQ(s[Collective::all_reduce].ring_bytes, want.reduce_scatter + want.all_gather)
              << trace;
          EXPECT_EQ(s[Collective::reduce_scatter].ring_bytes, want.reduce_scatter) << trace;
          EXPECT_EQ(s[Collective::all_gather].ring_bytes, 2 * want.all_gather) << trace;
          EXPECT_EQ(s[Collective::broadcast].ring_bytes, want.broadcast) << trace;
          EXPECT_EQ(s[Collective::barrier].ring_bytes, 0u);
          EXPECT_EQ(s[Collective::all_reduce].calls, 1u);
          EXPECT_EQ(s[Collective::all_gather].calls, 2u);
          EXPECT_EQ(s[Collective::barrier].calls, 1u);
          EXPECT_EQ(s.ring_bytes(), 2 * want.reduce_scatter + 3 * want.all_gather + want.broadcast);
          comm.reset_stats();
          EXPECT_EQ(comm.stats().ring_bytes(), 0u);
          EXPECT_EQ(comm.stats()[Collective::all_reduce].calls, 0u);
        });
      }
    }
  }
}

// The threads backend counts the bytes it copies between ranks' buffers, for both ranks (the
// one read sent them, the one written received them). Rank r computes its own chunk c_r, so
// per rank (e = element bytes): reduce_scatter sends count - |c_r| and receives (N-1)|c_r|;
// all_gather the reverse; all_reduce (read and written back) both count - |c_r| + (N-1)|c_r|;
// broadcast: the root sends (N-1) count, every other rank receives count. Summed over ranks,
// sent = received = the ring's total.
TEST(CommAccounting, ThreadsCountWhatTheyCopyAndTheSumsAreTheRings) {
  for (int ranks : {1, 2, 3, 4, 7}) {
    for (std::size_t count : {std::size_t{1}, std::size_t{10}, std::size_t{100003}}) {
      const int root = ranks / 2;
      const std::uint64_t e = 4;
      std::mutex mu;
      std::array<std::uint64_t, kCollectiveCount> sent{}, received{}, ring{};
      run_thread_ranks(ranks, {}, [&](Communicator& comm) {
        const int r = comm.rank();
        const std::uint64_t mine = shard_of(count, ranks, r).size, others = count - mine;
        const std::uint64_t peers = std::uint64_t(ranks - 1);
        std::vector<float> full(count, 1.0f), out(count);
        comm.all_reduce(full.data(), count, DType::f32);
        comm.reduce_scatter(full.data(), out.data(), count, DType::f32);
        comm.all_gather(full.data() + shard_of(count, ranks, r).offset, out.data(), count,
                        DType::f32);
        comm.broadcast(full.data(), count, DType::f32, root);
        comm.barrier();
        const Stats s = comm.stats();
        const auto trace = "N=" + std::to_string(ranks) + " count=" + std::to_string(count) +
                           " rank " + std::to_string(r);
        EXPECT_EQ(s[Collective::reduce_scatter].sent_bytes, others * e) << trace;
        EXPECT_EQ(s[Collective::reduce_scatter].received_bytes, peers * mine * e) << trace;
        EXPECT_EQ(s[Collective::all_gather].sent_bytes, peers * mine * e) << trace;
        EXPECT_EQ(s[Collective::all_gather].received_bytes, others * e) << trace;
        EXPECT_EQ(s[Collective::all_reduce].sent_bytes, (others + peers * mine) * e) << trace;
        EXPECT_EQ(s[Collective::all_reduce].received_bytes, (others + peers * mine) * e) << trace;
        EXPECT_EQ(s[Collective::broadcast].sent_bytes, r == root ? peers * count * e : 0) << trace;
        EXPECT_EQ(s[Collective::broadcast].received_bytes, r == root ? 0 : count * e) << trace;
        EXPECT_EQ(s[Collective::barrier].sent_bytes + s[Collective::barrier].received_bytes, 0u);
        EXPECT_EQ(s.control_bytes, 0u);
        std::lock_guard lock(mu);
        for (int k = 0; k < kCollectiveCount; ++k) {
          sent[k] += s.by_collective[k].sent_bytes;
          received[k] += s.by_collective[k].received_bytes;
          ring[k] += s.by_collective[k].ring_bytes;
        }
      });
      for (int k = 0; k < kCollectiveCount; ++k) {
        EXPECT_EQ(sent[k], ring[k]) << collective_name(static_cast<Collective>(k));
        EXPECT_EQ(received[k], ring[k]) << collective_name(static_cast<Collective>(k));
      }
    }
  }
}

// With N dividing the count every rank sends (N-1)/N of the buffer per phase: the figure of
// the planner's ring column, 2(N-1)/N of the buffer for an all-reduce.
TEST(CommAccounting, EvenChunksSendTheRingFractionOfTheBuffer) {
  const int ranks = 4;
  const std::size_t count = 4000;
  run_thread_ranks(ranks, {}, [&](Communicator& comm) {
    std::vector<float> data(count, 1.0f);
    comm.all_reduce(data.data(), count, DType::f32);
    EXPECT_EQ(comm.stats()[Collective::all_reduce].ring_bytes, 2 * 3 * count * 4 / 4);
    EXPECT_EQ(comm.buffer_bytes(), 0u);
    EXPECT_EQ(comm.backend_name(), "threads");
  });
}

}  // namespace
}  // namespace zerodp::comm
