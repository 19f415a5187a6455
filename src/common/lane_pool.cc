#include "zerodp/common/lane_pool.h"

#include <utility>

#include "zerodp/common/error.h"

namespace zerodp {

LanePool::LanePool(int lanes) {
  ZERODP_CHECK_MSG(lanes >= 1, "LanePool: expected at least 1 lane");
  for (int p = 1; p < lanes; ++p) threads_.emplace_back([this, p] { loop(p); });
}

LanePool::~LanePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    ++generation_;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void LanePool::run(const std::function<void(int)>& fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    pending_ = threads_.size();
    ++generation_;
  }
  start_.notify_all();
  std::exception_ptr mine;
  try {
    fn(0);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
  std::exception_ptr theirs = std::exchange(error_, nullptr);
  lock.unlock();
  if (mine) std::rethrow_exception(mine);
  if (theirs) std::rethrow_exception(theirs);
}

void LanePool::loop(int lane) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* fn = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (stop_) return;
      fn = fn_;
    }
    std::exception_ptr error;
    try {
      (*fn)(lane);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (error && !error_) error_ = error;
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace zerodp
