#include "zerodp/comm.h"

namespace zerodp::comm {

std::uint64_t Stats::ring_bytes() const {
  std::uint64_t total = 0;
  for (const auto& c : by_collective) total += c.ring_bytes;
  return total;
}

std::uint64_t Stats::sent_bytes() const {
  std::uint64_t total = 0;
  for (const auto& c : by_collective) total += c.sent_bytes;
  return total;
}

std::uint64_t Stats::received_bytes() const {
  std::uint64_t total = 0;
  for (const auto& c : by_collective) total += c.received_bytes;
  return total;
}

double Stats::wait_seconds() const {
  double total = 0;
  for (const auto& c : by_collective) total += c.wait_seconds;
  return total;
}

void Handle::wait() {
  if (state_) state_->wait();
}

}  // namespace zerodp::comm
