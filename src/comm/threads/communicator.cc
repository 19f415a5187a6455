#include "comm/threads/communicator.h"

#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/threads/collectives.h"
#include "zerodp/error.h"

namespace zerodp::comm::threads {

ThreadCommunicator::ThreadCommunicator(std::shared_ptr<Group> group, int rank,
                                       const Options& options)
    : group_(std::move(group)), rank_(rank), timeout_ms_(options.timeout.count()) {}

ThreadCommunicator::~ThreadCommunicator() {
  progress_.drain();
}

Handle ThreadCommunicator::issue(const Call& proto) {
  Call call = proto;
  call.seq = ++seq_;
  CollectiveStats& s = stats_->by_collective[static_cast<int>(call.kind)];
  s.calls += 1;
  s.bytes_sent += ring_bytes_sent(call, size(), rank_);
  auto work = std::make_shared<Work>(
      call, std::chrono::milliseconds(timeout_ms_.load(std::memory_order_relaxed)),
      static_cast<Executor*>(this), stats_);
  progress_.submit(work);
  return Handle(std::move(work));
}

Handle ThreadCommunicator::all_reduce_async(void* data, std::size_t count, DType dtype) {
  return issue(
      {.kind = Collective::all_reduce, .dtype = dtype, .count = count, .in = data, .out = data});
}

Handle ThreadCommunicator::reduce_scatter_async(const void* in, void* out, std::size_t count,
                                                DType dtype) {
  return issue(
      {.kind = Collective::reduce_scatter, .dtype = dtype, .count = count, .in = in, .out = out});
}

Handle ThreadCommunicator::all_gather_async(const void* in, void* out, std::size_t count,
                                            DType dtype) {
  return issue(
      {.kind = Collective::all_gather, .dtype = dtype, .count = count, .in = in, .out = out});
}

Handle ThreadCommunicator::broadcast_async(void* data, std::size_t count, DType dtype, int root) {
  if (root < 0 || root >= size()) {
    throw UsageError("broadcast root " + std::to_string(root) + " is not a rank of a group of " +
                     std::to_string(size()));
  }
  return issue({.kind = Collective::broadcast,
                .dtype = dtype,
                .root = root,
                .count = count,
                .in = data,
                .out = data});
}

void ThreadCommunicator::barrier() {
  issue({.kind = Collective::barrier}).wait();
}

void ThreadCommunicator::abort(const std::string& reason) noexcept {
  try {
    group_->fail("rank " + std::to_string(rank_) + " aborted: " + reason);
  } catch (...) {
    group_->fail("a rank aborted");
  }
}

void ThreadCommunicator::set_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    throw UsageError("the collective timeout must be positive, got " +
                     std::to_string(timeout.count()) + " ms");
  }
  timeout_ms_.store(timeout.count(), std::memory_order_relaxed);
}

void ThreadCommunicator::leave() {
  progress_.drain();
  group_->leave(rank_);
}

void ThreadCommunicator::sync(const Call& call, Work& work, Clock::time_point deadline) {
  group_->arrive(rank_, ++phase_, call.seq);
  group_->await(phase_, call, work.timeout(), deadline);
}

void ThreadCommunicator::execute(Work& work) {
  const Call& mine = work.call();
  try {
    if (group_->failed()) throw Error(group_->reason());
    const auto deadline = Clock::now() + work.timeout();
    group_->slot(rank_, mine.seq) = mine;
    sync(mine, work, deadline);
    // Every rank checks every call, so every rank reaches the same verdict.
    const int n = size();
    for (int r = 1; r < n; ++r) {
      if (!same_collective(group_->call(0, mine.seq), group_->call(r, mine.seq))) {
        std::vector<Call> calls(n);
        for (int q = 0; q < n; ++q) calls[q] = group_->call(q, mine.seq);
        group_->fail(mismatch_message(calls.data(), n));
        throw Error(group_->reason());
      }
    }
    if (std::string bad = check_buffers(*group_, mine.seq); !bad.empty()) {
      group_->fail(bad);
      throw Error(group_->reason());
    }
    if (run_collective(*group_, rank_, mine.seq)) sync(mine, work, deadline);
    work.complete();
  } catch (const Error& e) {
    work.fail(describe(mine) + " failed on rank " + std::to_string(rank_) + ": " + e.what());
  }
}

}  // namespace zerodp::comm::threads

namespace zerodp::comm {

void run_thread_ranks(int ranks, const Options& options,
                      const std::function<void(Communicator&)>& fn) {
  if (ranks < 1) throw UsageError("ranks must be at least 1, got " + std::to_string(ranks));
  if (options.timeout.count() <= 0) {
    throw UsageError("the collective timeout must be positive, got " +
                     std::to_string(options.timeout.count()) + " ms");
  }
  auto group = std::make_shared<threads::Group>(ranks);
  std::vector<std::unique_ptr<threads::ThreadCommunicator>> comms;
  comms.reserve(ranks);
  for (int r = 0; r < ranks; ++r) {
    comms.push_back(std::make_unique<threads::ThreadCommunicator>(group, r, options));
  }
  std::mutex mu;
  std::exception_ptr first;  // the failure that aborted the group, rethrown below
  auto run_rank = [&](int r) {
    threads::ThreadCommunicator& comm = *comms[r];
    try {
      fn(comm);
    } catch (...) {
      std::string what = "unknown exception";
      try {
        throw;
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
      }
      comm.abort(what);
    }
    comm.leave();
  };
  std::vector<std::thread> threads;
  threads.reserve(ranks - 1);
  for (int r = 1; r < ranks; ++r) threads.emplace_back(run_rank, r);
  run_rank(0);  // on the caller's thread: one thread fewer
  for (auto& t : threads) t.join();
  comms.clear();
  if (first) std::rethrow_exception(first);
}

}  // namespace zerodp::comm
