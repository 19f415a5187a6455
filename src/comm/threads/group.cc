#include "comm/threads/group.h"

#include <thread>

#include "zerodp/common/error.h"

namespace zerodp::comm::threads {

namespace {

// Spinning helps only when every rank can have a core of its own; with more ranks than cores
// a spinning waiter takes the core the awaited rank needs.
int spin_for(int ranks) {
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 || static_cast<unsigned>(ranks) <= cores ? Bell::kDefaultSpin : 20;
}

}  // namespace

Group::Group(int ranks) : ranks_(ranks), spin_(spin_for(ranks)), state_(ranks) {}

void Group::arrive(int rank, std::uint64_t phase, std::uint64_t seq) {
  // A rank that withdrew from a phase had the group failed first: it must not arrive again,
  // or its arrival at a later phase would stand in for the one it withdrew.
  if (failed()) throw Error(reason());
  count_arrival(rank, phase, seq);
}

void Group::count_arrival(int rank, std::uint64_t phase, std::uint64_t seq) {
  state_[rank].seq.store(seq, std::memory_order_relaxed);
  state_[rank].phase.store(phase, std::memory_order_relaxed);
  // acq_rel: this rank's writes (its Call, its data) happen before whatever a peer does
  // after seeing the phase complete.
  const std::uint64_t total = arrivals_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (total == phase * static_cast<std::uint64_t>(ranks_)) bell_.ring();
}

void Group::await(std::uint64_t phase, const Call& call, std::chrono::milliseconds timeout,
                  Clock::time_point deadline) {
  const std::uint64_t target = phase * static_cast<std::uint64_t>(ranks_);
  bool someone_left = false;
  auto done = [&] {
    if (arrivals_.load(std::memory_order_acquire) >= target) return true;
    if (failed()) return true;
    if (left_count_.load(std::memory_order_acquire) == 0) return false;
    for (int r = 0; r < ranks_; ++r) {
      if (state_[r].left.load(std::memory_order_acquire) &&
          state_[r].phase.load(std::memory_order_relaxed) < phase) {
        someone_left = true;
        return true;
      }
    }
    return false;
  };
  const bool in_time = bell_.wait_until(done, deadline, spin_);
  // Giving up withdraws this rank's arrival, unless the phase completed first: then the peers
  // may be reading this rank's buffers, and it goes on with them.
  std::uint64_t seen = arrivals_.load(std::memory_order_acquire);
  do {
    if (seen >= target) return;
  } while (!arrivals_.compare_exchange_weak(seen, seen - 1, std::memory_order_acq_rel,
                                            std::memory_order_acquire));
  if (!failed()) {
    bool any_left = false;
    const std::string who = missing_ranks(phase, call, &any_left);
    if (someone_left || any_left) {
      fail(describe(call) + " cannot complete: " + who);
    } else if (!in_time) {
      fail(describe(call) + " timed out after " + std::to_string(timeout.count()) + " ms: " + who);
    }
  }
  throw Error(reason());
}

void Group::depart(int rank, std::uint64_t phase, std::uint64_t seq) {
  count_arrival(rank, phase, seq);
  const std::uint64_t target = phase * static_cast<std::uint64_t>(ranks_);
  bell_.wait_until([&] { return arrivals_.load(std::memory_order_acquire) >= target; },
                   Clock::time_point::max(), spin_);
}

std::string Group::missing_ranks(std::uint64_t phase, const Call& call, bool* any_left) const {
  // Ranks that left are the cause when there are any: the others may yet arrive.
  std::string missing, left;
  for (int r = 0; r < ranks_; ++r) {
    const RankState& s = state_[r];
    if (s.phase.load(std::memory_order_relaxed) >= phase) continue;
    const std::uint64_t seq = s.seq.load(std::memory_order_relaxed);
    const std::string who = "rank " + std::to_string(r);
    if (s.left.load(std::memory_order_acquire)) {
      left += (left.empty() ? "" : ", ") + who + " left the group (its function returned)";
    } else if (seq == call.seq) {
      missing += (missing.empty() ? "" : ", ") + who + " did not finish it";
    } else {
      missing +=
          (missing.empty() ? "" : ", ") + who +
          (seq == 0 ? " did not arrive (it has issued no collective yet)"
                    : " did not arrive (its last collective was #" + std::to_string(seq) + ")");
    }
  }
  *any_left = !left.empty();
  if (!left.empty()) return left;
  return missing.empty() ? "every rank arrived" : missing;
}

void Group::fail(const std::string& reason) noexcept {
  if (failure_.fail(reason)) bell_.ring();
  // A host's ranks may be waiting in the host's group: they fail with this one.
  std::lock_guard<std::mutex> lock(hosts_mu_);
  for (auto& [key, host] : hosts_) host->fail(reason);
}

std::shared_ptr<Group> Group::host_group(std::uint64_t split, int host, int size) {
  std::lock_guard<std::mutex> lock(hosts_mu_);
  std::shared_ptr<Group>& group = hosts_[{split, host}];
  if (!group) group = std::make_shared<Group>(size);
  if (failed()) group->fail(reason());
  return group;
}

void Group::leave(int rank) noexcept {
  state_[rank].left.store(true, std::memory_order_release);
  left_count_.fetch_add(1, std::memory_order_acq_rel);
  bell_.ring();
}

}  // namespace zerodp::comm::threads
