// Group: the state N thread ranks share — what each rank called, how far each has got, and
// whether the group has failed.
//
// Ranks move through the same sequence of phases (every collective opens with an arrival
// phase and most close with a departure phase; see collectives.cc). Phase p is complete once
// every rank has arrived at it; a single counter of arrivals tells, and the rank whose arrival
// completes a phase rings the bell. Each rank's published Call (its buffers included) is
// written before it arrives and read by peers only between the arrival and the next phase,
// so two slots, by call parity, are enough.
//
// Thread-safety: every member may be used from every rank's progress thread; fail() and
// leave() also from the ranks' own threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "comm/bell.h"
#include "comm/call.h"
#include "comm/front.h"

namespace zerodp::comm::threads {

class Group {
 public:
  explicit Group(int ranks);
  int size() const { return ranks_; }

  // The slot rank publishes its call number seq in, and where peers read it.
  Call& slot(int rank, std::uint64_t seq) { return state_[rank].calls[seq % 2]; }
  const Call& call(int rank, std::uint64_t seq) const { return state_[rank].calls[seq % 2]; }

  // rank reached phase (1, 2, ... in order) while executing call seq. Throws Error, arriving
  // nowhere, once the group has failed.
  void arrive(int rank, std::uint64_t phase, std::uint64_t seq);
  // An arrival phase: blocks until every rank has arrived at phase. Throws Error (after failing
  // the group) if the deadline passes, or at once if a missing rank has left or the group has
  // failed; a rank that throws withdraws its arrival first, so the phase then completes for no
  // rank. Either every rank goes on to read its peers' buffers or none does.
  void await(std::uint64_t phase, const Call& call, std::chrono::milliseconds timeout,
             Clock::time_point deadline);
  // A departure phase: arrives at phase and blocks until every rank has, failure or not. A
  // peer may still be reading this rank's buffers, and every rank that completed the arrival
  // phase gets here without waiting on another, so the wait ends.
  void depart(int rank, std::uint64_t phase, std::uint64_t seq);

  // Marks the group failed; the first reason is kept. Wakes every waiter.
  void fail(const std::string& reason) noexcept;
  bool failed() const { return failure_.failed(); }
  std::string reason() const { return failure_.reason(); }

  // rank will issue no more collectives (its function returned).
  void leave(int rank) noexcept;

  // The group of `size` ranks that color `color` of split number `split` forms (a host, or the
  // ranks at one place on every host; the first rank to ask creates it, the others get the
  // same one). It fails whenever this group fails.
  std::shared_ptr<Group> host_group(std::uint64_t split, int color, int size);

  // The verdict compute() gives on call seq, computed by the first rank that asks and handed
  // to the others: a check over every rank's buffers needs doing once per collective, not once
  // per rank. Every rank must have published call seq before any asks.
  template <class Compute>
  std::string verdict(std::uint64_t seq, Compute compute) {
    std::lock_guard<std::mutex> lock(verdict_mu_);
    if (verdict_seq_ != seq) {
      verdict_ = compute();
      verdict_seq_ = seq;
    }
    return verdict_;
  }

  // The bytes moved for rank, counted by whichever rank does the copy. Kept here, not in the
  // rank's communicator, so a peer's count never outlives what it counts into.
  MovedBytes& moved(int rank) const { return state_[rank].moved; }

 private:
  struct alignas(64) RankState {
    Call calls[2];
    std::atomic<std::uint64_t> phase{0};
    std::atomic<std::uint64_t> seq{0};
    std::atomic<bool> left{false};
    mutable MovedBytes moved;
  };

  std::string missing_ranks(std::uint64_t phase, const Call& call, bool* any_left) const;
  void count_arrival(int rank, std::uint64_t phase, std::uint64_t seq);

  const int ranks_;
  const int spin_;
  std::vector<RankState> state_;
  alignas(64) std::atomic<std::uint64_t> arrivals_{0};
  // How many ranks have left: the waiters look for which only when some have, so that a wait
  // costs O(1) however many ranks there are.
  std::atomic<int> left_count_{0};
  std::mutex hosts_mu_;
  std::map<std::pair<std::uint64_t, int>, std::shared_ptr<Group>> hosts_;  // guarded by hosts_mu_
  std::mutex verdict_mu_;
  std::uint64_t verdict_seq_ = ~std::uint64_t{0};  // no call has that number
  std::string verdict_;
  Bell bell_;
  FailureLatch failure_;
};

}  // namespace zerodp::comm::threads
