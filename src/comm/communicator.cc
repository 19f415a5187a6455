#include "zerodp/comm.h"

namespace zerodp::comm {

std::uint64_t Stats::bytes_sent() const {
  std::uint64_t total = 0;
  for (const auto& c : by_collective) total += c.bytes_sent;
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
