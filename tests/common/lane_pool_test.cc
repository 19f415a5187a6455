// LanePool: every lane once per run, all at once, lane 0 on the caller; exceptions come back
// and the pool stays usable.
#include "zerodp/common/lane_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace zerodp {
namespace {

TEST(LanePool, EveryLaneRunsOncePerRun) {
  LanePool pool(4);
  EXPECT_EQ(pool.lanes(), 4);
  std::vector<std::atomic<int>> calls(4);
  for (int run = 0; run < 100; ++run) pool.run([&](int lane) { calls[lane]++; });
  for (int lane = 0; lane < 4; ++lane) EXPECT_EQ(calls[lane].load(), 100) << "lane " << lane;
}

TEST(LanePool, LanesRunAtOnceAndLaneZeroOnTheCaller) {
  // Each lane waits until every lane has arrived: only lanes that run at the same time pass.
  LanePool pool(3);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> arrived{0};
  std::vector<std::thread::id> ids(3);
  pool.run([&](int lane) {
    ids[lane] = std::this_thread::get_id();
    arrived++;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (arrived.load() < 3 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  });
  EXPECT_EQ(arrived.load(), 3);
  EXPECT_EQ(ids[0], caller);
  EXPECT_NE(ids[1], caller);
  EXPECT_NE(ids[2], caller);
  EXPECT_NE(ids[1], ids[2]);
}

TEST(LanePool, OneLaneIsACallOnTheCaller) {
  LanePool pool(1);
  std::thread::id ran;
  pool.run([&](int lane) {
    EXPECT_EQ(lane, 0);
    ran = std::this_thread::get_id();
  });
  EXPECT_EQ(ran, std::this_thread::get_id());
}

TEST(LanePool, AnExceptionOfAnyLaneIsRethrownAfterAllReturn) {
  LanePool pool(3);
  for (int thrower : {0, 2}) {
    std::atomic<int> returned{0};
    EXPECT_THROW(pool.run([&](int lane) {
      returned++;
      if (lane == thrower) throw std::runtime_error("lane failed");
    }),
                 std::runtime_error);
    EXPECT_EQ(returned.load(), 3) << "thrower " << thrower;
  }
  std::atomic<int> after{0};
  pool.run([&](int) { after++; });  // still usable
  EXPECT_EQ(after.load(), 3);
}

}  // namespace
}  // namespace zerodp
