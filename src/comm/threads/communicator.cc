#include "comm/threads/communicator.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/threads/collectives.h"
#include "zerodp/common/error.h"

namespace zerodp::comm::threads {

ThreadCommunicator::ThreadCommunicator(std::shared_ptr<Group> group, int rank,
                                       const Options& options, bool leave_on_destruction)
    : Front(options),
      group_(std::move(group)),
      rank_(rank),
      options_(options),
      leave_on_destruction_(leave_on_destruction) {}

ThreadCommunicator::~ThreadCommunicator() {
  progress_.drain();
  if (leave_on_destruction_) group_->leave(rank_);
}

std::unique_ptr<Communicator> ThreadCommunicator::host_group(int ranks_per_host) {
  return split(ranks_per_host, rank_ / std::max(ranks_per_host, 1), ranks_per_host,
               rank_ % std::max(ranks_per_host, 1));
}

std::unique_ptr<Communicator> ThreadCommunicator::peer_group(int ranks_per_host) {
  const int per_host = std::max(ranks_per_host, 1);
  return split(ranks_per_host, rank_ % per_host, size() / per_host, rank_ / per_host);
}

std::unique_ptr<Communicator> ThreadCommunicator::split(int ranks_per_host, int color, int size,
                                                        int index) {
  if (ranks_per_host < 1 || this->size() % ranks_per_host != 0) {
    throw UsageError("ranks per host must divide the " + std::to_string(this->size()) +
                     " ranks, got " + std::to_string(ranks_per_host));
  }
  // Every rank makes its splits in the same order, so the count names the split.
  std::shared_ptr<Group> group = group_->host_group(splits_++, color, size);
  Options options = options_;
  options.timeout = timeout();
  return std::make_unique<ThreadCommunicator>(std::move(group), index, options, true);
}

void ThreadCommunicator::leave() {
  progress_.drain();
  group_->leave(rank_);
}

void ThreadCommunicator::arrive(const Work& work, Clock::time_point deadline) {
  seq_ = work.call().seq;
  group_->slot(rank_, seq_) = work.call();
  group_->arrive(rank_, ++phase_, seq_);
  group_->await(phase_, work.call(), work.timeout(), deadline);
}

void ThreadCommunicator::move_data(const Work& /*work*/, Clock::time_point /*deadline*/) {
  // One verdict over every rank's buffers, before any data moves.
  const std::string bad = group_->verdict(seq_, [&] { return check_buffers(*group_, seq_); });
  if (!bad.empty()) {
    group_->fail(bad);
    throw Error(group_->reason());
  }
  if (run_collective(*group_, rank_, seq_)) {
    group_->depart(rank_, ++phase_, seq_);
  }
}

}  // namespace zerodp::comm::threads

namespace zerodp::comm {

void run_thread_ranks(int ranks, const Options& options,
                      const std::function<void(Communicator&)>& fn) {
  if (ranks < 1) throw UsageError("ranks must be at least 1, got " + std::to_string(ranks));
  Front::check_timeout(options.timeout);
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
