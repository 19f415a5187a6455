// LanePool: a fork-join pool of a fixed number of lanes, for splitting one computation into
// parts that run at once (a GPT micro-batch's samples over a rank's cores).
//
// Contract:
//  - run(fn) calls fn(lane) once for every lane 0..lanes-1, all at once: lane 0 on the
//    caller's thread, the others on threads the pool owns, which sleep between runs (no
//    spinning: with several pools on few cores, spinning threads steal each other's time).
//    It returns when every lane has returned.
//  - Exceptions: if lanes throw, run() rethrows one of them (the caller's lane first) after
//    every lane has returned; the pool stays usable.
//  - A pool of 1 lane owns no thread: run(fn) is fn(0).
//  - Thread-safety: run() is called from one thread at a time (the pool's owner).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zerodp {

class LanePool {
 public:
  // lanes >= 1 (ZERODP_CHECK).
  explicit LanePool(int lanes);
  ~LanePool();
  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;

  int lanes() const { return static_cast<int>(threads_.size()) + 1; }
  void run(const std::function<void(int lane)>& fn);

 private:
  void loop(int lane);

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  std::size_t pending_ = 0;       // lanes of the current run still working
  std::uint64_t generation_ = 0;  // one more per run: what wakes a lane
  bool stop_ = false;
  std::exception_ptr error_;  // the first exception of a lane other than 0
};

}  // namespace zerodp
