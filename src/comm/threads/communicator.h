// The threads backend: N ranks as threads of one process, communicating through shared memory.
//
// Each rank has a Communicator and a progress thread that executes its collectives in issue
// order (collectives.cc holds the algorithms): asynchronous collectives progress there while
// the rank's thread computes. A rank's thread that waits for a collective not yet started
// runs it itself (work.h), so synchronous collectives cost no hand-over. All ranks share a
// Group.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "comm/threads/group.h"
#include "comm/work.h"
#include "zerodp/comm.h"

namespace zerodp::comm::threads {

class ThreadCommunicator final : public Communicator, private Executor {
 public:
  ThreadCommunicator(std::shared_ptr<Group> group, int rank, const Options& options);
  // Finishes the collectives already issued, then stops the progress thread.
  ~ThreadCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  Handle all_reduce_async(void* data, std::size_t count, DType dtype) override;
  Handle reduce_scatter_async(const void* in, void* out, std::size_t count, DType dtype) override;
  Handle all_gather_async(const void* in, void* out, std::size_t count, DType dtype) override;
  Handle broadcast_async(void* data, std::size_t count, DType dtype, int root) override;
  void barrier() override;
  void abort(const std::string& reason) noexcept override;
  void set_timeout(std::chrono::milliseconds timeout) override;
  Stats stats() const override { return *stats_; }
  void reset_stats() override { *stats_ = Stats{}; }
  std::size_t buffer_bytes() const override { return 0; }
  std::string_view backend_name() const override { return "threads"; }

  // The rank's function has returned: lets issued collectives finish, then tells the peers
  // that this rank will issue no more (so that theirs fail at once instead of timing out).
  void leave();

 private:
  static ProgressHooks inline_hooks() {
    ProgressHooks hooks;
    hooks.run_inline = true;
    return hooks;
  }
  Handle issue(const Call& call);
  void execute(Work& work) override;
  // Waits for every rank to reach the next phase of work's collective.
  void sync(const Call& call, Work& work, Clock::time_point deadline);

  std::shared_ptr<Group> group_;
  const int rank_;
  std::atomic<std::int64_t> timeout_ms_;
  std::shared_ptr<Stats> stats_ = std::make_shared<Stats>();
  std::uint64_t seq_ = 0;                    // rank thread: calls issued
  std::uint64_t phase_ = 0;                  // whoever executes (one at a time): phases reached
  ProgressThread progress_{inline_hooks()};  // last: stops before the members above go
};

}  // namespace zerodp::comm::threads
