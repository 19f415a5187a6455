// Bell: how a thread of the communicator sleeps until something changes, with a deadline.
//
// Whoever changes shared state rings the bell after the change; whoever waits for a predicate
// over that state calls wait_until(). A waiter spins briefly (a collective's peer usually
// arrives within microseconds), then sleeps in the kernel (futex) so that it never takes a
// core from the computation it is meant to overlap. The state itself must live in atomics:
// the bell carries wake-ups, not data.
//
// Thread-safety: any number of ringers and waiters.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace zerodp::comm {

using Clock = std::chrono::steady_clock;

class Bell {
 public:
  // Wakes every waiter so that it re-evaluates its predicate. Cheap when nobody sleeps.
  void ring() noexcept;

  // Returns true once pred() holds, false if the deadline passes first. pred() is evaluated
  // on the waiting thread, possibly many times. spin: predicate checks before sleeping.
  template <class Pred>
  bool wait_until(Pred pred, Clock::time_point deadline, int spin = kDefaultSpin) {
    for (int i = 0; i < spin; ++i) {
      if (pred()) return true;
      pause();
    }
    for (;;) {
      const std::uint32_t seen = seq_.load(std::memory_order_acquire);
      if (pred()) return true;
      if (Clock::now() >= deadline) return false;
      sleep(seen, deadline);
    }
  }

  // Spins before sleeping: a few microseconds on this machine.
  static constexpr int kDefaultSpin = 2000;

 private:
  static void pause() noexcept;
  // Sleeps while seq_ == seen, until rung or the deadline. Spurious returns are fine.
  void sleep(std::uint32_t seen, Clock::time_point deadline);

  std::atomic<std::uint32_t> seq_{0};
  std::atomic<std::int32_t> sleepers_{0};
};

}  // namespace zerodp::comm
