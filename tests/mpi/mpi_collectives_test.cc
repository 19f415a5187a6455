// The MPI backend under mpirun: every collective x dtype x count against the same naive
// reference the threads backend is held to, bit for bit (so the backends agree), the ring
// byte counts, and background progress.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/comm_testing.h"
#include "zerodp/comm/communicator.h"

namespace zerodp::comm {
namespace {

using testing::Buffer;
using testing::first_difference;
using testing::rank_input;
using testing::reference_sum;

std::unique_ptr<Communicator> make(std::size_t segment_bytes = std::size_t{4} << 20) {
  Options options;
  options.timeout = std::chrono::seconds(30);  // a broken test fails, not hangs
  options.mpi_segment_bytes = segment_bytes;
  return make_mpi_communicator(options);
}

class MpiCollectives : public ::testing::TestWithParam<DType> {};

TEST_P(MpiCollectives, MatchTheReferenceBitForBit) {
  const DType dtype = GetParam();
  // Small segments too, so that the reduce-scatter's many-segment path runs.
  for (std::size_t segment_bytes : {std::size_t{4} << 20, std::size_t{1000}}) {
    auto comm = make(segment_bytes);
    const int n = comm->size();
    const int r = comm->rank();
    EXPECT_EQ(comm->backend_name(), "mpi");
    for (std::size_t count : testing::test_counts(n)) {
      SCOPED_TRACE("count " + std::to_string(count) + " segment " + std::to_string(segment_bytes));
      std::vector<Buffer> inputs;
      for (int j = 0; j < n; ++j) inputs.push_back(rank_input(dtype, count, j));
      const Buffer sum = reference_sum(inputs);
      const Shard c = shard_of(count, n, r);

      Buffer data = inputs[r];
      comm->all_reduce(data.data(), count, dtype);
      EXPECT_EQ(first_difference(data, sum), -1) << "all_reduce";

      Buffer out(dtype, c.size);
      comm->reduce_scatter(inputs[r].data(), out.data(), count, dtype);
      EXPECT_EQ(first_difference(out, sum.slice(c.offset, c.size)), -1) << "reduce_scatter";
      Buffer staged = inputs[r];
      comm->reduce_scatter(staged.data(), staged.at(c.offset), count, dtype);
      comm->all_gather(staged.at(c.offset), staged.data(), count, dtype);
      EXPECT_EQ(first_difference(staged, sum), -1) << "reduce_scatter + all_gather in place";

      Buffer gathered(dtype, count);
      const Buffer mine = sum.slice(c.offset, c.size);
      comm->all_gather(mine.data(), gathered.data(), count, dtype);
      EXPECT_EQ(first_difference(gathered, sum), -1) << "all_gather";

      for (int root : {0, n - 1}) {
        Buffer b = inputs[r];
        comm->broadcast(b.data(), count, dtype, root);
        EXPECT_EQ(first_difference(b, inputs[root]), -1) << "broadcast from " << root;
      }
      comm->barrier();
    }
    if (segment_bytes == 1000 && n > 1) {
      EXPECT_EQ(comm->buffer_bytes(),
                2u * (n - 1) * (1000 / dtype_size(dtype)) * dtype_size(dtype));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, MpiCollectives,
                         ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(MpiAccounting, BytesAreTheRingFigures) {
  auto comm = make();
  const int n = comm->size();
  const int r = comm->rank();
  const std::size_t count = 100003;
  auto chunk = [&](int j) { return shard_of(count, n, ((j % n) + n) % n).size; };
  std::vector<float> data(count, 1.0f), out(count);
  comm->all_reduce(data.data(), count, DType::f32);
  comm->reduce_scatter(data.data(), out.data(), count, DType::f32);
  comm->all_gather(data.data() + shard_of(count, n, r).offset, out.data(), count, DType::f32);
  comm->broadcast(data.data(), count, DType::f32, 1);
  std::uint64_t rs = 0, ag = 0;
  for (int s = 0; s < n - 1; ++s) {
    rs += chunk(r - 1 - s) * 4;
    ag += chunk(r - s) * 4;
  }
  const Stats st = comm->stats();
  EXPECT_EQ(st[Collective::all_reduce].ring_bytes, rs + ag);
  EXPECT_EQ(st[Collective::reduce_scatter].ring_bytes, rs);
  EXPECT_EQ(st[Collective::all_gather].ring_bytes, ag);
  EXPECT_EQ(st[Collective::broadcast].ring_bytes, (r + 1) % n == 1 ? 0u : count * 4);
  EXPECT_EQ(st[Collective::all_reduce].calls, 1u);

  // Counted as handed to MPI: each peer gets its own chunk (reduce_scatter) and this rank's
  // chunk (all_gather); the root sends the broadcast to every peer. Every message is received.
  const std::uint64_t mine = chunk(r) * 4, others = count * 4 - mine;
  const std::uint64_t peers = std::uint64_t(n - 1);
  EXPECT_EQ(st[Collective::reduce_scatter].sent_bytes, others);
  EXPECT_EQ(st[Collective::reduce_scatter].received_bytes, peers * mine);
  EXPECT_EQ(st[Collective::all_gather].sent_bytes, peers * mine);
  EXPECT_EQ(st[Collective::all_gather].received_bytes, others);
  EXPECT_EQ(st[Collective::all_reduce].sent_bytes, others + peers * mine);
  EXPECT_EQ(st[Collective::all_reduce].received_bytes, peers * mine + others);
  EXPECT_EQ(st[Collective::broadcast].sent_bytes, r == 1 ? peers * count * 4 : 0u);
  EXPECT_EQ(st[Collective::broadcast].received_bytes, r == 1 ? 0u : count * 4);
  // The handshake: one call record to each peer per collective, apart from the data.
  EXPECT_GE(st.control_bytes, 4 * peers * 24);
}

// Rank 0's all_gather completes while it computes, without wait(): the progress thread moved
// the data. The peers hold back until rank 0 has seen it incomplete.
TEST(MpiAsync, CollectiveCompletesWhileTheCallerComputes) {
  int level = 0;
  MPI_Query_thread(&level);
  ASSERT_EQ(level, MPI_THREAD_MULTIPLE) << "the test signals over MPI_COMM_WORLD itself";
  auto comm = make();
  const int n = comm->size();
  const int r = comm->rank();
  const std::size_t count = 1 << 16;
  const Shard c = shard_of(count, n, r);
  std::vector<float> mine(c.size, static_cast<float>(r + 1)), out(count, 0.0f);
  int token = 0;
  if (r == 0) {
    Handle h = comm->all_gather_async(mine.data(), out.data(), count, DType::f32);
    volatile double sink = 0;
    for (int i = 0; i < 100000; ++i) sink = sink + i * 0.5;
    EXPECT_FALSE(h.completed());
    for (int j = 1; j < n; ++j) MPI_Send(&token, 1, MPI_INT, j, 77, MPI_COMM_WORLD);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!h.completed() && std::chrono::steady_clock::now() < give_up) {
      for (int i = 0; i < 10000; ++i) sink = sink + i * 0.5;
    }
    EXPECT_TRUE(h.completed());
    h.wait();
    EXPECT_EQ(comm->stats()[Collective::all_gather].wait_seconds, 0.0);
  } else {
    MPI_Recv(&token, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    comm->all_gather(mine.data(), out.data(), count, DType::f32);
  }
  for (int j = 0; j < n; ++j) {
    const Shard cj = shard_of(count, n, j);
    for (std::size_t i = 0; i < cj.size; ++i) {
      ASSERT_EQ(out[cj.offset + i], static_cast<float>(j + 1));
    }
  }
}

}  // namespace
}  // namespace zerodp::comm
