// Every collective x dtype x N x count of the threads backend against the naive reference,
// bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "comm/comm_testing.h"
#include "zerodp/comm/communicator.h"

namespace zerodp::comm {
namespace {

using testing::Buffer;
using testing::first_difference;
using testing::rank_input;
using testing::reference_sum;

std::vector<Buffer> inputs_of(DType dtype, std::size_t count, int ranks) {
  std::vector<Buffer> inputs;
  for (int r = 0; r < ranks; ++r) inputs.push_back(rank_input(dtype, count, r));
  return inputs;
}

using Param = std::tuple<Collective, DType, int>;

class ThreadCollectives : public ::testing::TestWithParam<Param> {};

TEST_P(ThreadCollectives, MatchTheReferenceBitForBit) {
  // Not a structured binding: lambdas below capture these (clang 14 cannot capture bindings).
  const Collective kind = std::get<0>(GetParam());
  const DType dtype = std::get<1>(GetParam());
  const int ranks = std::get<2>(GetParam());
  for (std::size_t count : testing::test_counts(ranks)) {
    SCOPED_TRACE("count " + std::to_string(count));
    const std::vector<Buffer> inputs = inputs_of(dtype, count, ranks);
    const Buffer sum = reference_sum(inputs);
    run_thread_ranks(ranks, {}, [&](Communicator& comm) {
      const int r = comm.rank();
      const Shard c = shard_of(count, ranks, r);
      switch (kind) {
        case Collective::all_reduce: {
          Buffer data = inputs[r];
          comm.all_reduce(data.data(), count, dtype);
          EXPECT_EQ(first_difference(data, sum), -1) << "rank " << r;
          break;
        }
        case Collective::reduce_scatter: {
          const Buffer expected = sum.slice(c.offset, c.size);
          Buffer out(dtype, c.size);
          comm.reduce_scatter(inputs[r].data(), out.data(), count, dtype);
          EXPECT_EQ(first_difference(out, expected), -1) << "rank " << r << " out of place";
          Buffer in_place = inputs[r];  // out = in + chunk offset
          comm.reduce_scatter(in_place.data(), in_place.at(c.offset), count, dtype);
          EXPECT_EQ(first_difference(in_place.slice(c.offset, c.size), expected), -1)
              << "rank " << r << " in place";
          break;
        }
        case Collective::all_gather: {
          // Rank j contributes chunk j of its own input; the result is those chunks in order.
          Buffer expected(dtype, count);
          for (int j = 0; j < ranks; ++j) {
            const Shard cj = shard_of(count, ranks, j);
            for (std::size_t i = 0; i < cj.size; ++i) {
              expected.set(cj.offset + i, inputs[j].get(cj.offset + i));
            }
          }
          const Buffer mine = inputs[r].slice(c.offset, c.size);
          Buffer out(dtype, count);
          comm.all_gather(mine.data(), out.data(), count, dtype);
          EXPECT_EQ(first_difference(out, expected), -1) << "rank " << r << " out of place";
          Buffer in_place(dtype, count);  // in = out + chunk offset
          if (c.size > 0) std::memcpy(in_place.at(c.offset), mine.data(), mine.bytes.size());
          comm.all_gather(in_place.at(c.offset), in_place.data(), count, dtype);
          EXPECT_EQ(first_difference(in_place, expected), -1) << "rank " << r << " in place";
          break;
        }
        case Collective::broadcast: {
          for (int root : {0, ranks - 1, ranks / 2}) {
            Buffer data = inputs[r];
            comm.broadcast(data.data(), count, dtype, root);
            EXPECT_EQ(first_difference(data, inputs[root]), -1) << "rank " << r << " root " << root;
          }
          break;
        }
        case Collective::barrier:
          comm.barrier();
          break;
        case Collective::all_to_all:  // its own test: host_group_test.cc
          ADD_FAILURE() << "all_to_all is not a case of this test";
          break;
      }
    });
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto [kind, dtype, ranks] = info.param;
  return std::string(collective_name(kind)) + "_" + std::string(dtype_name(dtype)) + "_N" +
         std::to_string(ranks);
}

INSTANTIATE_TEST_SUITE_P(
    All, ThreadCollectives,
    ::testing::Combine(::testing::Values(Collective::all_reduce, Collective::reduce_scatter,
                                         Collective::all_gather, Collective::broadcast),
                       ::testing::Values(DType::f32, DType::f16, DType::bf16),
                       ::testing::Values(1, 2, 3, 4, 7, 8)),
    param_name);

// The property ZeRO relies on: a stage that reduce-scatters and then all-gathers gets the bits
// a stage that all-reduces gets.
TEST(ThreadCollectivesAlso, AllReduceEqualsReduceScatterThenAllGather) {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (int ranks : {2, 3, 5}) {
      const std::size_t count = 10007;
      run_thread_ranks(ranks, {}, [&](Communicator& comm) {
        const int r = comm.rank();
        Buffer reduced = rank_input(dtype, count, r, 7);
        Buffer staged = reduced;
        comm.all_reduce(reduced.data(), count, dtype);
        const Shard c = shard_of(count, ranks, r);
        comm.reduce_scatter(staged.data(), staged.at(c.offset), count, dtype);
        comm.all_gather(staged.at(c.offset), staged.data(), count, dtype);
        EXPECT_EQ(first_difference(reduced, staged), -1)
            << dtype_name(dtype) << " N=" << ranks << " rank " << r;
      });
    }
  }
}

// Chunks of several MiB take the streaming copy and sum paths.
TEST(ThreadCollectivesAlso, LargeBuffers) {
  const std::size_t count = (std::size_t{5} << 20) + 3;  // 20 MiB of fp32: 10 MiB chunks
  std::vector<Buffer> inputs = inputs_of(DType::f32, count, 2);
  const Buffer sum = reference_sum(inputs);
  run_thread_ranks(2, {}, [&](Communicator& comm) {
    const int r = comm.rank();
    const Shard c = shard_of(count, 2, r);
    Buffer out(DType::f32, c.size), gathered(DType::f32, count);
    comm.reduce_scatter(inputs[r].data(), out.data(), count, DType::f32);
    comm.all_gather(out.data(), gathered.data(), count, DType::f32);
    EXPECT_EQ(first_difference(gathered, sum), -1);
    Buffer data = inputs[r];
    comm.broadcast(data.data(), count, DType::f32, 1);
    EXPECT_EQ(first_difference(data, inputs[1]), -1);
  });
}

// Infinities, NaN, subnormals and overflow come out as dtype.h's conversions make them.
TEST(ThreadCollectivesAlso, SpecialValuesFollowTheReference) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<float>> values = {
      {inf, 1.0f, -inf, nan, 1e-40f, 60000.0f, 3.0e38f, 0.0f, -0.0f, 6e-8f},
      {1.0f, inf, 2.0f, 1.0f, 1e-40f, 60000.0f, 3.0e38f, -0.0f, -0.0f, 6e-8f},
      {2.0f, 3.0f, -inf, 2.0f, -3e-40f, 1.0f, 1.0f, 0.0f, -0.0f, -3e-8f}};
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    std::vector<Buffer> inputs;
    for (const auto& v : values) {
      Buffer b(dtype, v.size());
      for (std::size_t i = 0; i < v.size(); ++i) b.set(i, v[i]);
      inputs.push_back(b);
    }
    const Buffer sum = reference_sum(inputs);
    run_thread_ranks(3, {}, [&](Communicator& comm) {
      Buffer data = inputs[comm.rank()];
      comm.all_reduce(data.data(), data.count(), dtype);
      EXPECT_EQ(first_difference(data, sum), -1) << dtype_name(dtype);
    });
  }
}

// Many collectives in flight at once, of every kind, complete in order with correct results.
TEST(ThreadCollectivesAlso, ManyAsyncCollectivesInFlight) {
  const int ranks = 4;
  const int rounds = 40;
  run_thread_ranks(ranks, {}, [&](Communicator& comm) {
    const int r = comm.rank();
    std::vector<Buffer> data, gathered;
    std::vector<Handle> handles;
    data.reserve(rounds);
    gathered.reserve(rounds);
    for (int i = 0; i < rounds; ++i) {
      const std::size_t count = 1 + 37 * static_cast<std::size_t>(i);
      data.push_back(rank_input(DType::bf16, count, r, i));
      gathered.emplace_back(DType::bf16, count);
      handles.push_back(comm.all_reduce_async(data.back().data(), count, DType::bf16));
      const Shard c = shard_of(count, ranks, r);
      handles.push_back(comm.all_gather_async(data.back().at(c.offset), gathered.back().data(),
                                              count, DType::bf16));
    }
    handles.back().wait();
    for (auto& h : handles) EXPECT_TRUE(h.completed());  // issue order
    for (int i = 0; i < rounds; ++i) {
      const std::size_t count = data[i].count();
      std::vector<Buffer> inputs;
      for (int j = 0; j < ranks; ++j) inputs.push_back(rank_input(DType::bf16, count, j, i));
      const Buffer sum = reference_sum(inputs);
      EXPECT_EQ(first_difference(data[i], sum), -1) << "round " << i;
      EXPECT_EQ(first_difference(gathered[i], sum), -1) << "round " << i;
    }
  });
}

}  // namespace
}  // namespace zerodp::comm
