// Communicator: the collectives ZeRO is made of, for one rank of a group of N.
//
// Contract (every backend keeps it; tests hold each backend to it):
//  - Collectives are issued in the same order, with the same count and dtype, on every rank
//    (as with NCCL or MPI). A rank that issues a different collective, count, dtype or root
//    than its peers at the same position gets zerodp::Error naming both calls and the ranks,
//    never corrupted data.
//  - Element counts need not be divisible by N. Full buffers are never padded: the chunk of
//    rank r is shard_of(count, N, r) (zerodp/common/shard.h) — contiguous, ceil(count/N) elements
//    except for short trailing chunks, which may be empty.
//  - Reduction is a sum. Every result element is ((x_0 + x_1) + x_2) + ... in rank order,
//    accumulated in fp32 for every dtype and rounded once to the dtype at the end (dtype.h
//    rounding; a NaN comes out as dtype.h converts it, payloads are not kept). So results
//    are bitwise identical from run to run, across backends, and between all_reduce and
//    reduce_scatter followed by all_gather: a ZeRO stage never changes the bits of a sum.
//    With N = 1 every collective is a copy (a sum of one term is that term).
//  - Buffers: count elements of dtype, any alignment. reduce_scatter's out may alias
//    in + its chunk offset, all_gather's in may alias out + its chunk offset; otherwise in
//    and out are apart. Under the threads backend the ranks' buffers must be apart too (each
//    rank its own memory); a violation is reported like a mismatch, before any data moves.
//  - *_async returns a Handle at once; the collective makes progress in the background (on a
//    progress thread of the backend) while the caller computes. Buffers must stay valid and
//    untouched until wait() returns. Collectives of one communicator complete in issue order.
//    The synchronous forms are the async form followed by wait(); a wait() that finds its
//    collective not yet started may carry it out on the caller's thread (threads backend).
//  - Failure never hangs: a collective that has not completed within the timeout (default
//    300 s, counted from when the progress thread starts it) throws zerodp::Error on every
//    rank naming the collective, its call number ("all_reduce #7 (1000 x fp32) timed out
//    after 2000 ms: rank 3 did not arrive (its last collective was #6)") and the ranks that
//    did not arrive. Under run_thread_ranks a rank whose function returns without issuing a
//    collective its peers wait in fails them at once ("rank 3 left the group"). abort() —
//    called by a rank that fails — marks the group failed; every pending and later collective
//    on every rank then throws Error carrying that rank's reason ("rank 1 aborted: <reason>").
//    Once failed, a communicator stays failed. Error messages of a failed collective read
//    "<collective #k (count x dtype)> failed on rank r: <reason>".
//  - Accounting (stats()): per kind of collective, calls, the ring bytes (a prediction), the
//    bytes counted as they moved, sent and received, and seconds this rank spent blocked in
//    wait(). Calls and ring bytes are added when a collective is issued: the bytes the ring
//    algorithms would send, exactly, with chunks c_0..c_{N-1} from shard_of() and rank r
//    sending to rank r+1 (mod N):
//      reduce_scatter: step s = 0..N-2 sends chunk (r-1-s) mod N, so every chunk but c_r:
//                      bytes = (count - |c_r|) * dtype size
//      all_gather:     step s = 0..N-2 sends chunk (r-s) mod N, so every chunk but c_{r+1}:
//                      bytes = (count - |c_{(r+1) mod N}|) * dtype size
//      all_reduce:     reduce_scatter + all_gather (twice (N-1)/N of the buffer on average)
//      all_to_all:     every block but its own to its owner, directly (no ring):
//                      bytes = (N-1) * count * dtype size (count: elements per block)
//      broadcast:      a pipelined chain from the root: every rank forwards the whole buffer
//                      to rank r+1 except the one whose successor is the root:
//                      bytes = count * dtype size, or 0 if (r+1) mod N == root (or N == 1)
//      barrier:        0
//    Summed over ranks each phase moves (N-1) * count elements; with equal chunks every rank
//    sends (N-1)/N of the buffer per phase.
//    Counted bytes: neither backend runs these rings, and each counts what it really moves,
//    where it moves it (summed over ranks, sent = received = the ring's total, (N-1) * count
//    elements a phase):
//      MPI: the bytes handed to MPI send calls (sent) and posted receives (received). Each
//        rank sends each peer that peer's chunk (reduce_scatter: count - |c_r| sent) and its
//        own chunk to every peer (all_gather: (N-1) |c_r|); all_reduce is the two; broadcast:
//        the root sends the buffer to every peer ((N-1) count), the others none. The
//        handshake that opens every collective and failure notices are control_bytes.
//      threads: the bytes copied between different ranks' buffers, counted for both ranks:
//        the rank whose buffer is read sent them, the rank whose buffer is written received
//        them. Rank r computes its own chunk: reduce_scatter reads c_r of every peer's input
//        (received (N-1) |c_r|; each peer j sent count - |c_j| in all); all_gather copies every
//        peer's chunk (received count - |c_r|, sent (N-1) |c_r|); all_reduce reads c_r of every
//        peer and writes the sum back into each (sent = received = (N-1) |c_r| + count - |c_r|);
//        broadcast: every other rank copies the root's buffer (the root sent (N-1) count).
//  - Thread-safety: one communicator belongs to one rank's thread. Handles may be waited on
//    from that thread only.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "zerodp/common/dtype.h"
#include "zerodp/common/ledger.h"

namespace zerodp::comm {

enum class Collective : std::uint8_t {
  all_reduce,
  reduce_scatter,
  all_gather,
  broadcast,
  barrier,
  all_to_all
};
inline constexpr int kCollectiveCount = 6;
std::string_view collective_name(Collective c);

struct CollectiveStats {
  std::uint64_t calls = 0;
  // What the ring algorithms above would send for these calls: a formula, added when each
  // call is issued (a prediction, not a count).
  std::uint64_t ring_bytes = 0;
  // Counted where the data moves, as this backend moves it (see "Counted bytes" above):
  // bytes of this rank's buffers that went to peers, and of peers' buffers that came here.
  std::uint64_t sent_bytes = 0;
  std::uint64_t received_bytes = 0;
  double wait_seconds = 0.0;  // time blocked in wait(), i.e. communication not hidden
};

struct Stats {
  std::array<CollectiveStats, kCollectiveCount> by_collective{};
  const CollectiveStats& operator[](Collective c) const {
    return by_collective[static_cast<int>(c)];
  }
  // The backend's own messages (MPI: each collective's handshake, failure notices), counted
  // apart from the collectives' data; 0 on the threads backend (its handshake is shared memory).
  std::uint64_t control_bytes = 0;
  std::uint64_t ring_bytes() const;
  std::uint64_t sent_bytes() const;
  // Adds another communicator's (a host group's) figures, collective by collective.
  Stats& operator+=(const Stats& other);
  std::uint64_t received_bytes() const;
  double wait_seconds() const;
};

struct Options {
  // A collective not complete after this long fails on every rank instead of hanging. Long
  // enough for the slowest rank's compute between collectives; short, to learn of a lost
  // rank sooner.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // MPI backend: reduce-scatter moves chunks in segments of at most this many bytes per peer,
  // double-buffered, so it holds 2 * (N-1) segments of staging (buffer_bytes()) and sums one
  // segment while the next arrives. Larger: fewer messages; smaller: less memory.
  std::size_t mpi_segment_bytes = std::size_t{4} << 20;
};

// A collective in flight. Default-constructed: already complete.
class Handle {
 public:
  class State {
   public:
    virtual ~State() = default;
    virtual void wait() = 0;       // blocks until complete or failed; throws Error on failure
    virtual bool completed() = 0;  // true once complete or failed; never blocks
  };
  Handle() = default;
  explicit Handle(std::shared_ptr<State> state) : state_(std::move(state)) {}
  // Blocks until the collective completes; throws zerodp::Error if it failed. Idempotent.
  void wait();
  // Blocks until the collective completes or fails, and never throws: for the owner of its
  // buffers, which must not free them while the collective may still touch them.
  void settle() noexcept;
  bool completed() const { return !state_ || state_->completed(); }

 private:
  std::shared_ptr<State> state_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place: data holds count elements on every rank; on completion every rank holds the sum.
  virtual Handle all_reduce_async(void* data, std::size_t count, DType dtype) = 0;
  // in holds count elements; out receives this rank's chunk of the sum,
  // shard_of(count, N, rank).size elements. out may alias in + chunk offset.
  virtual Handle reduce_scatter_async(const void* in, void* out, std::size_t count,
                                      DType dtype) = 0;
  // in holds this rank's chunk (shard_of(count, N, rank).size elements); out receives all
  // count elements, chunks in rank order. in may alias out + chunk offset (in-place gather).
  virtual Handle all_gather_async(const void* in, void* out, std::size_t count, DType dtype) = 0;
  // data holds count elements; on completion every rank holds root's.
  virtual Handle broadcast_async(void* data, std::size_t count, DType dtype, int root) = 0;
  // in holds N blocks of count elements, block j for rank j; out receives N blocks, block j
  // from rank j (this rank's own block copied). in and out apart. Moves data only: any dtype,
  // u8 included. Both backends send each block straight to its owner, sent = received =
  // (N-1) count elements per rank.
  virtual Handle all_to_all_async(const void* in, void* out, std::size_t count, DType dtype) = 0;
  virtual void barrier() = 0;

  void all_reduce(void* data, std::size_t count, DType dtype) {
    all_reduce_async(data, count, dtype).wait();
  }
  void reduce_scatter(const void* in, void* out, std::size_t count, DType dtype) {
    reduce_scatter_async(in, out, count, dtype).wait();
  }
  void all_gather(const void* in, void* out, std::size_t count, DType dtype) {
    all_gather_async(in, out, count, dtype).wait();
  }
  void broadcast(void* data, std::size_t count, DType dtype, int root) {
    broadcast_async(data, count, dtype, root).wait();
  }
  void all_to_all(const void* in, void* out, std::size_t count, DType dtype) {
    all_to_all_async(in, out, count, dtype).wait();
  }

  // Marks the group failed with this rank's reason (see the contract). Never throws.
  virtual void abort(const std::string& reason) noexcept = 0;
  virtual void set_timeout(std::chrono::milliseconds timeout) = 0;

  virtual Stats stats() const = 0;
  virtual void reset_stats() = 0;
  // Bytes of staging buffers the backend holds for this rank (0 if it copies in place).
  virtual std::size_t buffer_bytes() const = 0;
  // Counts the staging buffers in `ledger` (Category::comm_buffers) from now on; null: in
  // none. The ledger must outlive its use. Throws BudgetExceeded when that ledger's budget
  // refuses what is held already. Call it while no collective is in flight.
  virtual void set_ledger(Ledger* /*ledger*/) {}
  // Allocates now the staging that reductions of up to count elements of dtype need, so it is
  // counted (and refused by a budget) at a known moment, not inside a collective. A backend
  // that copies in place holds none. MPI: 2 (N-1) s e bytes, with e the element's bytes and s
  // = min(max(mpi_segment_bytes / e, 1), ceil(count / N)) elements per segment.
  virtual void reserve(std::size_t /*count*/, DType /*dtype*/) {}
  virtual std::string_view backend_name() const = 0;

  // Hosts (ZeRO++'s hpZ): ranks_per_host consecutive ranks share a host, rank r on host
  // r / ranks_per_host. host_group() returns this rank's host as a communicator of its own,
  // rank r % ranks_per_host in it. Collective: every rank calls it at the same point with the
  // same value, which must divide size() (else UsageError). The host communicator fails when
  // this one does (an abort or a timeout here fails it too); a rank that destroys it has left
  // it. Its collectives are ordered with this one's as issued, and its stats are its own.
  virtual std::unique_ptr<Communicator> host_group(int ranks_per_host) = 0;
  // The ranks at this rank's place on every host (r mod ranks_per_host equal), rank
  // r / ranks_per_host in it: where qgZ's second all-to-all runs. The same terms as host_group.
  virtual std::unique_ptr<Communicator> peer_group(int ranks_per_host) = 0;
  // The ranks per host the backend knows: threads, all of them (one process); MPI, the ranks
  // sharing a processor name when every host holds that many consecutive ranks, else 0.
  virtual int ranks_per_host() const = 0;
};

// The threads backend: runs fn(communicator) for ranks 0..ranks-1, each on its own thread of
// this process (rank 0 on the caller's), and returns when all have returned. If any rank
// throws, the group is aborted with that rank's message, so the others fail fast, and the
// first failure is rethrown here. A rank whose fn returns while its peers wait in a collective
// it never issued fails them at once. Throws UsageError if ranks < 1 or the timeout is not
// positive.
void run_thread_ranks(int ranks, const Options& options,
                      const std::function<void(Communicator&)>& fn);

#if defined(ZERODP_HAVE_MPI)
// The MPI backend, for a process started by mpirun: one rank per process, over duplicates of
// MPI_COMM_WORLD. Collective: every process creates its communicators in the same order (a
// process that does not come within the timeout makes the others throw Error). MPI is
// initialised on first use (MPI_THREAD_MULTIPLE, so the program may make MPI calls of its own)
// on one progress thread per process that makes all of the backend's MPI calls, and finalised
// on it at exit; if the program initialised MPI itself (with at least MPI_THREAD_SERIALIZED),
// the backend uses it and leaves finalising to the program. Throws Error if MPI fails.
std::unique_ptr<Communicator> make_mpi_communicator(const Options& options);
#endif

}  // namespace zerodp::comm
