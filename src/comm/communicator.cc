#include "zerodp/comm/communicator.h"

#include <exception>

namespace zerodp::comm {

namespace {
std::uint64_t sum(const Stats& s, std::uint64_t CollectiveStats::*field) {
  std::uint64_t total = 0;
  for (const auto& c : s.by_collective) total += c.*field;
  return total;
}
}  // namespace

Stats& Stats::operator+=(const Stats& other) {
  for (int c = 0; c < kCollectiveCount; ++c) {
    CollectiveStats& mine = by_collective[c];
    const CollectiveStats& theirs = other.by_collective[c];
    mine.calls += theirs.calls;
    mine.ring_bytes += theirs.ring_bytes;
    mine.sent_bytes += theirs.sent_bytes;
    mine.received_bytes += theirs.received_bytes;
    mine.wait_seconds += theirs.wait_seconds;
  }
  control_bytes += other.control_bytes;
  return *this;
}

std::uint64_t Stats::ring_bytes() const {
  return sum(*this, &CollectiveStats::ring_bytes);
}
std::uint64_t Stats::sent_bytes() const {
  return sum(*this, &CollectiveStats::sent_bytes);
}
std::uint64_t Stats::received_bytes() const {
  return sum(*this, &CollectiveStats::received_bytes);
}

double Stats::wait_seconds() const {
  double total = 0;
  for (const auto& c : by_collective) total += c.wait_seconds;
  return total;
}

void Handle::wait() {
  if (state_) state_->wait();
}

void Handle::settle() noexcept {
  try {
    wait();
  } catch (const std::exception&) {
  }
}

}  // namespace zerodp::comm
