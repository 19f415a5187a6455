// Hosts (Communicator::host_group) on the threads backend: a host's collectives see its own
// ranks only and count in its own stats; the group's failure fails every host, and a rank that
// drops its host communicator fails the host's waiting peers at once; the peer groups (one place
// on every host) are the complement. all_to_all delivers block r of every rank to rank r and
// counts (N-1) blocks each way. And u8: gathered as bytes, never reduced.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/common/error.h"

namespace zerodp::comm {
namespace {

using ::testing::HasSubstr;

TEST(HostGroup, EachHostReducesItsOwnRanksAndCountsApart) {
  // 6 ranks in hosts of 3 and, split again, of 2: every host's sum is its ranks' only.
  std::mutex mu;
  std::vector<float> sums3(6), sums2(6);
  std::vector<std::uint64_t> world_calls(6), host_calls(6);
  run_thread_ranks(6, {}, [&](Communicator& comm) {
    const std::unique_ptr<Communicator> three = comm.host_group(3);
    const std::unique_ptr<Communicator> two = comm.host_group(2);
    EXPECT_EQ(three->size(), 3);
    EXPECT_EQ(three->rank(), comm.rank() % 3);
    EXPECT_EQ(two->rank(), comm.rank() % 2);
    float a = float(1 << comm.rank()), b = a;
    three->all_reduce(&a, 1, DType::f32);
    two->all_reduce(&b, 1, DType::f32);
    std::lock_guard lock(mu);
    sums3[comm.rank()] = a;
    sums2[comm.rank()] = b;
    world_calls[comm.rank()] = comm.stats()[Collective::all_reduce].calls;
    host_calls[comm.rank()] = three->stats()[Collective::all_reduce].calls;
  });
  EXPECT_EQ(sums3, (std::vector<float>{7, 7, 7, 56, 56, 56}));
  EXPECT_EQ(sums2, (std::vector<float>{3, 3, 12, 12, 48, 48}));
  for (int r = 0; r < 6; ++r) {
    // The reductions are the hosts' alone.
    EXPECT_EQ(world_calls[r], 0u);
    EXPECT_EQ(host_calls[r], 1u);
  }
}

TEST(HostGroup, HostsMustDivideTheRanks) {
  run_thread_ranks(4, {}, [&](Communicator& comm) {
    EXPECT_THROW(comm.host_group(3), UsageError);
    EXPECT_THROW(comm.host_group(0), UsageError);
    EXPECT_EQ(comm.ranks_per_host(), 4);  // one process: one host
  });
}

TEST(HostGroup, TheGroupsAbortFailsTheHostsCollectives) {
  Options options;
  options.timeout = std::chrono::seconds(60);  // failures must come from the abort, not this
  std::mutex mu;
  std::vector<std::string> errors(4);
  EXPECT_THROW(run_thread_ranks(4, options,
                                [&](Communicator& comm) {
                                  const auto host = comm.host_group(2);
                                  if (comm.rank() == 3) {
                                    // Aborts the group while its host communicator lives on:
                                    // rank 2 waits for it in their host, and must not wait on.
                                    comm.abort("out of data");
                                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                                    return;
                                  }
                                  float x = 1;
                                  try {
                                    host->all_reduce(&x, 1, DType::f32);
                                    host->all_reduce(&x, 1, DType::f32);
                                  } catch (const Error& e) {
                                    std::lock_guard lock(mu);
                                    errors[comm.rank()] = e.what();
                                    throw;
                                  }
                                }),
               Error);
  EXPECT_THAT(errors[2], HasSubstr("rank 3 aborted: out of data"));
}

// A failure that reaches a collective while its data moves must not let a rank return before
// its peers are done with its buffer: once the call has thrown, the buffer is its caller's again.
// Here the host's two ranks all-reduce 8 MiB over and over while another rank aborts the group;
// after the throw each rank fills its buffer and looks again 20 ms later. A peer still summing
// into it would change it. Thirty trials, the abort 5 to 14 ms after the start.
TEST(HostGroup, AFailureWhileDataMovesLeavesNoPeerWritingABufferGivenBack) {
  constexpr std::size_t kCount = std::size_t{1} << 21;
  for (int trial = 0; trial < 30; ++trial) {
    Options options;
    options.timeout = std::chrono::seconds(60);
    std::atomic<int> changed{0};
    EXPECT_THROW(
        run_thread_ranks(4, options,
                         [&](Communicator& comm) {
                           const auto host = comm.host_group(2);
                           if (comm.rank() == 3) {
                             std::this_thread::sleep_for(std::chrono::milliseconds(5 + trial % 10));
                             comm.abort("stop");
                           }
                           if (comm.rank() >= 2) return;
                           std::vector<float> x(kCount, 1.0f);
                           try {
                             for (;;) host->all_reduce(x.data(), kCount, DType::f32);
                           } catch (const Error&) {
                             std::fill(x.begin(), x.end(), -7.0f);
                             std::this_thread::sleep_for(std::chrono::milliseconds(20));
                             changed += std::any_of(x.begin(), x.end(),
                                                    [](float v) { return v != -7.0f; });
                             throw;
                           }
                         }),
        Error);
    EXPECT_EQ(changed.load(), 0) << "trial " << trial;
  }
}

TEST(HostGroup, ARankThatDropsItsHostFailsTheHostsPeersAtOnce) {
  Options options;
  options.timeout = std::chrono::seconds(60);
  const auto t0 = std::chrono::steady_clock::now();
  std::string error;
  run_thread_ranks(2, options, [&](Communicator& comm) {
    auto host = comm.host_group(2);
    if (comm.rank() == 1) {
      host.reset();  // leaves the host without its collective
      return;
    }
    float x = 1;
    try {
      host->all_reduce(&x, 1, DType::f32);
    } catch (const Error& e) {
      error = e.what();
    }
  });
  EXPECT_THAT(error, HasSubstr("rank 1"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
}

TEST(HostGroup, PeerGroupsJoinTheSamePlaceOfEveryHost) {
  std::mutex mu;
  std::vector<float> sums(6);
  run_thread_ranks(6, {}, [&](Communicator& comm) {
    const std::unique_ptr<Communicator> peers = comm.peer_group(2);  // hosts {0,1} {2,3} {4,5}
    EXPECT_EQ(peers->size(), 3);
    EXPECT_EQ(peers->rank(), comm.rank() / 2);
    float x = float(1 << comm.rank());
    peers->all_reduce(&x, 1, DType::f32);
    std::lock_guard lock(mu);
    sums[comm.rank()] = x;
  });
  EXPECT_EQ(sums, (std::vector<float>{21, 42, 21, 42, 21, 42}));
}

TEST(AllToAll, EveryRankGetsItsBlockOfEveryRankAndCountsThem) {
  for (DType dtype : {DType::u8, DType::f32, DType::bf16}) {
    std::mutex mu;
    std::vector<std::vector<std::uint8_t>> got(3);
    run_thread_ranks(3, {}, [&](Communicator& comm) {
      const std::size_t block = 2, elem = dtype_size(dtype);
      std::vector<std::uint8_t> in(3 * block * elem), out(in.size(), 0xee);
      // Byte k of the block for rank j from rank r: 100 r + 10 j + k.
      for (int j = 0; j < 3; ++j) {
        for (std::size_t k = 0; k < block * elem; ++k) {
          in[j * block * elem + k] = std::uint8_t(100 * comm.rank() + 10 * j + k);
        }
      }
      comm.all_to_all(in.data(), out.data(), block, dtype);
      const CollectiveStats s = comm.stats()[Collective::all_to_all];
      EXPECT_EQ(s.ring_bytes, 2 * block * elem);
      EXPECT_EQ(s.sent_bytes, 2 * block * elem);
      EXPECT_EQ(s.received_bytes, 2 * block * elem);
      // in and out may not overlap.
      EXPECT_THROW(comm.all_to_all(in.data(), in.data() + 1, block, dtype), Error);
      std::lock_guard lock(mu);
      got[comm.rank()] = out;
    });
    const std::size_t bytes = 2 * dtype_size(dtype);
    for (int r = 0; r < 3; ++r) {
      for (int j = 0; j < 3; ++j) {
        for (std::size_t k = 0; k < bytes; ++k) {
          EXPECT_EQ(got[r][j * bytes + k], std::uint8_t(100 * j + 10 * r + k))
              << dtype_name(dtype) << " rank " << r << " block " << j;
        }
      }
    }
  }
}

TEST(BytesDType, GatheredAsBytesAndNeverReduced) {
  std::mutex mu;
  std::vector<std::vector<std::uint8_t>> got(3);
  run_thread_ranks(3, {}, [&](Communicator& comm) {
    // 7 bytes over 3 ranks: chunks of 3, 3 and 1.
    std::vector<std::uint8_t> all(7, 0);
    const std::uint8_t mine[3] = {std::uint8_t(10 * comm.rank()),
                                  std::uint8_t(10 * comm.rank() + 1),
                                  std::uint8_t(10 * comm.rank() + 2)};
    comm.all_gather(mine, all.data(), 7, DType::u8);
    EXPECT_EQ(comm.stats()[Collective::all_gather].ring_bytes,
              7u - (comm.rank() == 1 ? 1u : 3u));  // every chunk but its successor's
    EXPECT_THROW(comm.all_reduce(all.data(), 7, DType::u8), UsageError);
    std::vector<std::uint8_t> out(3);
    EXPECT_THROW(comm.reduce_scatter(all.data(), out.data(), 7, DType::u8), UsageError);
    std::lock_guard lock(mu);
    got[comm.rank()] = all;
  });
  for (const auto& g : got) EXPECT_EQ(g, (std::vector<std::uint8_t>{0, 1, 2, 10, 11, 12, 20}));
}

}  // namespace
}  // namespace zerodp::comm
