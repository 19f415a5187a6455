// Front: the part of a Communicator that every backend shares, written once.
//
// The front implements Communicator's collectives and bookkeeping: it checks the arguments,
// builds the Call, numbers it (issue order), counts its calls and ring bytes (stats), hands it
// to a Work with the current timeout, and queues the Work on the backend's progress thread.
// There it executes every collective the same way:
//
//   1. fail at once if the group has failed (a failed communicator stays failed);
//   2. arrive(): the backend waits until every rank has issued this collective and learns
//      their calls — the barrier, and where a missing rank is noticed and named;
//   3. the mismatch check: every rank compares every rank's call, so all reach one verdict
//      before any data moves;
//   4. move_data(): the backend moves the data.
//
// A failure at any step fails the Work with "<call> failed on rank r: <reason>".
//
// A backend implements only what differs: how ranks meet and exchange their calls, how data
// moves, and how a failure is recorded and made known to the peers. A new collective touches
// three places: the contract (zerodp/comm/communicator.h), this front (its *_async here, its name
// and ring bytes in call.cc), and each backend's data movement (threads/ and mpi/ collectives.cc).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "comm/call.h"
#include "comm/work.h"
#include "zerodp/comm/communicator.h"

namespace zerodp::comm {

// A group's failure, recorded once: once failed, failed for good, and the first reason is kept
// (step 1 above reads it). The threads backend keeps one for the whole group, the MPI backend
// one per process. Thread-safe.
class FailureLatch {
 public:
  // Records `reason` unless the latch has failed already; true if this call failed it. Never
  // throws: out of memory, the failure is kept without its reason.
  bool fail(const std::string& reason) noexcept;
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  std::string reason() const;

 private:
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;
  std::string reason_;  // guarded by mu_
};

// The bytes a backend moved for one rank, counted as they move: on progress threads, and on
// the threads backend by the peer that does the copy. Atomic, so stats() may read them while
// a collective is under way.
struct MovedBytes {
  std::array<std::atomic<std::uint64_t>, kCollectiveCount> sent{}, received{};
  std::atomic<std::uint64_t> control{0};
  void count(Collective kind, std::uint64_t sent_bytes, std::uint64_t received_bytes) {
    sent[static_cast<int>(kind)].fetch_add(sent_bytes, std::memory_order_relaxed);
    received[static_cast<int>(kind)].fetch_add(received_bytes, std::memory_order_relaxed);
  }
  void reset() {
    for (auto& a : sent) a.store(0, std::memory_order_relaxed);
    for (auto& a : received) a.store(0, std::memory_order_relaxed);
    control.store(0, std::memory_order_relaxed);
  }
};

class Front : public Communicator, private Executor {
 public:
  // Throws UsageError if the timeout is not positive (as set_timeout does).
  static void check_timeout(std::chrono::milliseconds timeout);

  Handle all_reduce_async(void* data, std::size_t count, DType dtype) final;
  Handle reduce_scatter_async(const void* in, void* out, std::size_t count, DType dtype) final;
  Handle all_gather_async(const void* in, void* out, std::size_t count, DType dtype) final;
  Handle broadcast_async(void* data, std::size_t count, DType dtype, int root) final;
  Handle all_to_all_async(const void* in, void* out, std::size_t count, DType dtype) final;
  void barrier() final;
  void abort(const std::string& reason) noexcept final;
  void set_timeout(std::chrono::milliseconds timeout) final;
  Stats stats() const final;
  void reset_stats() final;

 protected:
  explicit Front(const Options& options);
  // The timeout now in force (set_timeout's), for a host group made from this communicator.
  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(timeout_ms_.load(std::memory_order_relaxed));
  }

  // --- What a backend implements. ---

  // The thread that executes this communicator's Works, one at a time, in issue order.
  virtual ProgressThread& progress() = 0;
  // Waits until every rank has issued work's collective (its position is call().seq), after
  // which call_of() gives each rank's. Throws Error, with the group failed, if a rank does
  // not arrive by the deadline (naming it) or the group fails meanwhile.
  virtual void arrive(const Work& work, Clock::time_point deadline) = 0;
  // Rank r's call at the position arrive() reached.
  virtual const Call& call_of(int rank) const = 0;
  // Moves the data of work's collective, on which every rank agrees. Throws Error on failure.
  virtual void move_data(const Work& work, Clock::time_point deadline) = 0;
  // Marks the group failed with a verdict every rank reaches by itself (the first reason is
  // kept), or with this rank's abort, which its peers must be told of.
  virtual void fail_group(const std::string& reason) noexcept = 0;
  virtual void abort_group(const std::string& reason) noexcept = 0;
  virtual bool failed() const = 0;
  virtual std::string reason() const = 0;
  // After a failed collective: lets go of transfers still under way (default: none).
  virtual void drop_transfers() noexcept {}
  // Where the backend counts the bytes it moves for this rank (stats()' sent, received and
  // control bytes).
  virtual MovedBytes& moved_bytes() const = 0;

 private:
  Handle issue(const Call& call);
  void execute(Work& work) final;
  // Step 3: throws Error, with the group failed, if the ranks' calls differ.
  void check_calls_agree();

  std::atomic<std::int64_t> timeout_ms_;
  std::shared_ptr<Stats> stats_ = std::make_shared<Stats>();  // shared with the Works
  std::uint64_t seq_ = 0;                                     // rank thread: calls issued
};

}  // namespace zerodp::comm
