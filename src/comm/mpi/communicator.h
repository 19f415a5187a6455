// The MPI backend: one rank per process, over duplicates of MPI_COMM_WORLD.
//
// The front (comm/front.h) issues, numbers, counts and checks each collective; this backend
// supplies the rest. Every collective runs on the process's MPI progress thread (runtime.h) in two
// stages:
//  1. a handshake: each rank sends its Call to every peer and receives theirs. It is the
//     barrier, the mismatch check (every rank holds all N calls, so all reach one verdict)
//     and the point where a missing rank is noticed: receives still open at the deadline
//     name the ranks that did not arrive. Until it completes no data moves, and its
//     receives can be cancelled.
//  2. the data: point-to-point messages, see collectives.cc.
// Waiting polls MPI with a backoff (spin, then yield, then short sleeps) and, between polls,
// the control channel: a second communicator on which a rank that aborts or times out sends
// its reason to every peer, so that theirs fail at once with it.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/front.h"
#include "comm/work.h"
#include "zerodp/comm/communicator.h"

namespace zerodp::comm::mpi {

// A Call as it travels in the handshake.
struct WireCall {
  std::uint64_t seq;
  std::uint64_t count;
  std::int32_t root;
  std::uint8_t kind;
  std::uint8_t dtype;
  std::uint8_t pad[2];
};

class MpiCommunicator final : public Front {
 public:
  explicit MpiCommunicator(const Options& options);
  // A host or peer group of `parent` (host_group(), peer_group()): the parent's data and control
  // communicators split by `color`, ranks in the parent's order. The parent must outlive it; it
  // fails whenever the parent fails.
  MpiCommunicator(MpiCommunicator& parent, int color, const Options& options);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::size_t buffer_bytes() const override {
    return staging_bytes_.load(std::memory_order_relaxed);
  }
  std::string_view backend_name() const override { return "mpi"; }
  void set_ledger(Ledger* ledger) override;
  MovedBytes& moved_bytes() const override { return moved_; }
  // " (rank 1 is on host h1)" for ranks on other hosts than the rest share; "" on one host.
  std::string where(const std::vector<int>& ranks) const;
  void reserve(std::size_t count, DType dtype) override;
  std::unique_ptr<Communicator> host_group(int ranks_per_host) override;
  std::unique_ptr<Communicator> peer_group(int ranks_per_host) override;
  int ranks_per_host() const override;
  // Staging bytes a reduction of count elements of elem_bytes each needs (see reserve()).
  std::size_t staging_bytes_for(std::size_t count, std::size_t elem_bytes) const;

  // --- Used by the algorithms (collectives.cc), on the progress thread. ---

  // Nonblocking point-to-point of any size (split into messages MPI's int counts can hold).
  void post_send(const void* data, std::size_t bytes, int peer);
  void post_recv(void* data, std::size_t bytes, int peer);
  // Waits for every posted message; throws Error on deadline, abort or a peer's notice.
  void wait_posted(const Call& call, const char* stage);
  // Staging for at least bytes, allocated once and kept (first touches are costly here).
  unsigned char* staging(std::size_t bytes);
  std::size_t segment_bytes() const { return segment_bytes_; }

 private:
  // The front's backend interface.
  ProgressThread& progress() override;
  // The handshake: sends this rank's call to every peer and receives theirs.
  void arrive(const Work& work, Clock::time_point deadline) override;
  const Call& call_of(int rank) const override { return peer_calls_[rank]; }
  void move_data(const Work& work, Clock::time_point deadline) override;
  void fail_group(const std::string& reason) noexcept override { fail(reason, false); }
  void abort_group(const std::string& reason) noexcept override;
  void drop_transfers() noexcept override { cancel_posted(); }

  void collective(const Call& call);  // collectives.cc: dispatches to the three below
  void reduce_scatter(const Call& call, const void* in, void* out);
  void all_gather(const Call& call, const void* in, void* out);
  void broadcast(const Call& call);
  void all_to_all(const Call& call);

  // Failure state of this rank's view of the group; the first reason is kept.
  void fail(const std::string& reason, bool tell_peers) noexcept;
  bool failed() const override { return failure_.failed(); }
  std::string reason() const override { return failure_.reason(); }
  // Progress thread: notices from peers, and this rank's own notice to send.
  void poll_control();
  void send_notice();
  [[noreturn]] void give_up(const Call& call, const std::string& why);
  void cancel_posted() noexcept;

  int rank_ = 0, size_ = 1;
  MPI_Comm data_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL;
  const std::size_t segment_bytes_;

  // Progress thread only.
  Clock::time_point deadline_{};
  std::chrono::milliseconds timeout_{};  // the one deadline_ was set from, for messages
  std::vector<MPI_Request> requests_;
  std::vector<int> request_peer_;
  std::vector<bool> request_is_recv_;
  std::vector<WireCall> calls_;
  std::vector<Call> peer_calls_;                 // calls_ as Calls, for the front's mismatch check
  void learn_hosts(Clock::time_point deadline);  // progress thread, at construction
  std::unique_ptr<Communicator> split(int ranks_per_host, int color);
  void listen(Clock::time_point deadline);  // progress thread: hosts, then notices
  std::vector<std::string> hosts_;          // each rank's host name (processor name)
  // Counted where the bytes are handed to MPI: data under the collective being moved, the
  // handshake and notices as control.
  mutable MovedBytes moved_;
  Collective moving_ = Collective::barrier;  // progress thread
  // Staging: grown by reserve() on the rank's thread or, when a reduction needs more, on the
  // progress thread; counted in ledger_.
  std::mutex staging_mu_;
  Ledger* ledger_ = nullptr;
  Buffer<unsigned char> staging_;
  std::atomic<std::size_t> staging_bytes_{0};
  static constexpr int kNoticeBytes = 1024;
  char notice_[kNoticeBytes] = {};
  MPI_Request notice_request_ = MPI_REQUEST_NULL;
  std::string outgoing_notice_;  // kept until the process ends: its sends are let go
  bool notice_sent_ = false;

  FailureLatch failure_;
  std::atomic<bool> notice_pending_{false};  // this rank has a reason to tell its peers
  MpiCommunicator* parent_ = nullptr;        // a host group's
  std::mutex children_mu_;
  std::vector<MpiCommunicator*> children_;  // host groups made from this one (children_mu_)
};

}  // namespace zerodp::comm::mpi
