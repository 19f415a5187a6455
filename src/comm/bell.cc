#include "comm/bell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace zerodp::comm {
namespace {

// The word a futex sleeps on: the value inside the atomic (same size and layout, as
// libstdc++'s own atomic waits assume).
std::uint32_t* futex_word(std::atomic<std::uint32_t>& a) {
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  return reinterpret_cast<std::uint32_t*>(&a);
}

}  // namespace

void Bell::pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

void Bell::ring() noexcept {
  seq_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    syscall(SYS_futex, futex_word(seq_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }
}

void Bell::sleep(std::uint32_t seen, Clock::time_point deadline) {
  // steady_clock is CLOCK_MONOTONIC, which FUTEX_WAIT_BITSET takes as an absolute deadline.
  const auto since_epoch = deadline.time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  timespec abs{};
  abs.tv_sec = static_cast<time_t>(secs.count());
  abs.tv_nsec = static_cast<long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - secs).count());
  // Registering before the final check pairs with ring(): either the ringer sees a sleeper,
  // or this thread sees the new sequence number (both sides use seq_cst).
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  if (seq_.load(std::memory_order_seq_cst) == seen) {
    syscall(SYS_futex, futex_word(seq_), FUTEX_WAIT_BITSET_PRIVATE, seen, &abs, nullptr,
            FUTEX_BITSET_MATCH_ANY);
  }
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace zerodp::comm
