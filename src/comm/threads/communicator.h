// The threads backend: N ranks as threads of one process, communicating through shared memory.
//
// The front (comm/front.h) issues, numbers, counts and checks each collective; this backend
// supplies the rest. Each rank has a progress thread that executes its collectives in issue
// order (collectives.cc holds the algorithms): asynchronous collectives progress there while
// the rank's thread computes. A rank's thread that waits for a collective not yet started
// runs it itself (work.h), so synchronous collectives cost no hand-over. All ranks share a
// Group, where each publishes its call and waits for the others.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "comm/front.h"
#include "comm/threads/group.h"
#include "comm/work.h"
#include "zerodp/comm/communicator.h"

namespace zerodp::comm::threads {

class ThreadCommunicator final : public Front {
 public:
  ThreadCommunicator(std::shared_ptr<Group> group, int rank, const Options& options,
                     bool leave_on_destruction = false);
  // Finishes the collectives already issued, then stops the progress thread (and, for a host
  // group, leaves it).
  ~ThreadCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::size_t buffer_bytes() const override { return 0; }
  std::string_view backend_name() const override { return "threads"; }
  MovedBytes& moved_bytes() const override { return group_->moved(rank_); }

  // The rank's function has returned: lets issued collectives finish, then tells the peers
  // that this rank will issue no more (so that theirs fail at once instead of timing out).
  void leave();

  std::unique_ptr<Communicator> host_group(int ranks_per_host) override;
  std::unique_ptr<Communicator> peer_group(int ranks_per_host) override;
  int ranks_per_host() const override { return size(); }

 private:
  static ProgressHooks inline_hooks() {
    ProgressHooks hooks;
    hooks.run_inline = true;
    return hooks;
  }
  ProgressThread& progress() override { return progress_; }
  void arrive(const Work& work, Clock::time_point deadline) override;
  const Call& call_of(int rank) const override { return group_->call(rank, seq_); }
  void move_data(const Work& work, Clock::time_point deadline) override;
  void fail_group(const std::string& reason) noexcept override { group_->fail(reason); }
  // The group is shared: failing it is telling every rank.
  void abort_group(const std::string& reason) noexcept override { group_->fail(reason); }
  bool failed() const override { return group_->failed(); }
  std::string reason() const override { return group_->reason(); }

  std::shared_ptr<Group> group_;
  const int rank_;
  const Options options_;
  const bool leave_on_destruction_;
  std::uint64_t splits_ = 0;  // host and peer groups made: the same count on every rank
  // A split: this rank joins group `color` of `size` ranks as rank `index`.
  std::unique_ptr<Communicator> split(int ranks_per_host, int color, int size, int index);
  // Whoever executes (one at a time): the collective executing, and the phases reached.
  std::uint64_t seq_ = 0;
  std::uint64_t phase_ = 0;
  ProgressThread progress_{inline_hooks()};  // last: stops before the members above go
};

}  // namespace zerodp::comm::threads
