// Asynchronous collectives really run in the background: work proceeds while one is in
// flight, and it completes without the issuing rank calling wait().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "comm/comm_testing.h"
#include "zerodp/comm/communicator.h"

namespace zerodp::comm {
namespace {

// A unit of real computation, so that "computing" is not sleeping.
double compute(std::vector<double>& v) {
  double s = 0;
  for (double& x : v) {
    x = x * 1.0000001 + 0.5;
    s += x;
  }
  return s;
}

// Rank 0 issues an all_gather and computes. Rank 1 holds back its own all_gather until rank 0
// has seen the collective incomplete while computing; from then on rank 0 only computes and
// polls completed(), never wait(). The collective must complete during that computation, so
// the progress threads did the communication, and the final wait() blocks for no time.
TEST(CommAsync, CollectiveCompletesWhileTheCallerComputes) {
  const std::size_t count = 1 << 16;
  std::atomic<bool> rank0_saw_incomplete{false};
  run_thread_ranks(2, {}, [&](Communicator& comm) {
    const int r = comm.rank();
    const Shard c = shard_of(count, 2, r);
    std::vector<float> mine(c.size, static_cast<float>(r + 1));
    std::vector<float> out(count, 0.0f);
    std::vector<double> work(4096, 1.0);
    if (r == 1) {
      while (!rank0_saw_incomplete.load()) std::this_thread::yield();
      comm.all_gather(mine.data(), out.data(), count, DType::f32);
    } else {
      Handle h = comm.all_gather_async(mine.data(), out.data(), count, DType::f32);
      compute(work);
      EXPECT_FALSE(h.completed());  // rank 1 has not issued its part yet
      rank0_saw_incomplete.store(true);
      long rounds = 0;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!h.completed() && std::chrono::steady_clock::now() < give_up) {
        compute(work);
        ++rounds;
      }
      EXPECT_TRUE(h.completed()) << "no progress without wait() after " << rounds << " rounds";
      h.wait();
      EXPECT_EQ(comm.stats()[Collective::all_gather].wait_seconds, 0.0);
    }
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(out[i], i < shard_of(count, 2, 0).size ? 1.0f : 2.0f) << i;
    }
  });
}

// Blocking in wait() is what the wait counter measures.
TEST(CommAsync, WaitTimeCountsTheBlockedWait) {
  std::atomic<bool> rank0_waits{false};
  run_thread_ranks(2, {}, [&](Communicator& comm) {
    std::vector<float> data(10, 1.0f);
    if (comm.rank() == 1) {
      while (!rank0_waits.load()) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      comm.all_reduce(data.data(), data.size(), DType::f32);
    } else {
      Handle h = comm.all_reduce_async(data.data(), data.size(), DType::f32);
      EXPECT_FALSE(h.completed());
      rank0_waits.store(true);
      h.wait();
      EXPECT_GT(comm.stats()[Collective::all_reduce].wait_seconds, 0.0);
      EXPECT_EQ(comm.stats().wait_seconds(), comm.stats()[Collective::all_reduce].wait_seconds);
    }
    EXPECT_EQ(data[0], 2.0f);
  });
}

TEST(CommAsync, HandlesCompleteInIssueOrderAndWaitIsIdempotent) {
  run_thread_ranks(3, {}, [&](Communicator& comm) {
    std::vector<std::vector<float>> bufs(5, std::vector<float>(1000, 1.0f));
    std::vector<Handle> hs;
    for (auto& b : bufs) hs.push_back(comm.all_reduce_async(b.data(), b.size(), DType::f32));
    hs.back().wait();
    for (auto& h : hs) EXPECT_TRUE(h.completed());
    for (auto& h : hs) h.wait();
    hs[0].wait();
    for (auto& b : bufs) EXPECT_EQ(b[999], 3.0f);
    Handle none;
    EXPECT_TRUE(none.completed());
    none.wait();
  });
}

}  // namespace
}  // namespace zerodp::comm
