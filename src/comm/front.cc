#include "comm/front.h"

#include <string>
#include <vector>

#include "zerodp/common/error.h"

namespace zerodp::comm {

bool FailureLatch::fail(const std::string& reason) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_.load(std::memory_order_relaxed)) return false;
  try {
    reason_ = reason;
  } catch (...) {
  }
  failed_.store(true, std::memory_order_release);
  return true;
}

std::string FailureLatch::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

void Front::check_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    throw UsageError("the collective timeout must be positive, got " +
                     std::to_string(timeout.count()) + " ms");
  }
}

Front::Front(const Options& options) : timeout_ms_(options.timeout.count()) {
  check_timeout(options.timeout);
}

Stats Front::stats() const {
  Stats s = *stats_;
  const MovedBytes& moved = moved_bytes();
  for (int k = 0; k < kCollectiveCount; ++k) {
    s.by_collective[k].sent_bytes = moved.sent[k].load(std::memory_order_relaxed);
    s.by_collective[k].received_bytes = moved.received[k].load(std::memory_order_relaxed);
  }
  s.control_bytes = moved.control.load(std::memory_order_relaxed);
  return s;
}

void Front::reset_stats() {
  *stats_ = Stats{};
  moved_bytes().reset();
}

Handle Front::issue(const Call& proto) {
  Call call = proto;
  call.seq = ++seq_;
  // Counted when issued (the contract), so a collective that later fails is counted too.
  CollectiveStats& s = stats_->by_collective[static_cast<int>(call.kind)];
  s.calls += 1;
  s.ring_bytes += ring_bytes_sent(call, size(), rank());
  auto work = std::make_shared<Work>(
      call, std::chrono::milliseconds(timeout_ms_.load(std::memory_order_relaxed)),
      static_cast<Executor*>(this), stats_);
  progress().submit(work);
  return Handle(std::move(work));
}

namespace {
// Bytes have no sum: a reduction of u8 is a caller's mistake, refused before it is issued.
void check_summable(DType dtype, const char* collective) {
  if (dtype == DType::u8) {
    throw UsageError(std::string(collective) + " sums fp32, fp16 or bf16 elements, not u8 bytes");
  }
}
}  // namespace

Handle Front::all_reduce_async(void* data, std::size_t count, DType dtype) {
  check_summable(dtype, "all_reduce");
  return issue(
      {.kind = Collective::all_reduce, .dtype = dtype, .count = count, .in = data, .out = data});
}

Handle Front::reduce_scatter_async(const void* in, void* out, std::size_t count, DType dtype) {
  check_summable(dtype, "reduce_scatter");
  return issue(
      {.kind = Collective::reduce_scatter, .dtype = dtype, .count = count, .in = in, .out = out});
}

Handle Front::all_gather_async(const void* in, void* out, std::size_t count, DType dtype) {
  return issue(
      {.kind = Collective::all_gather, .dtype = dtype, .count = count, .in = in, .out = out});
}

Handle Front::broadcast_async(void* data, std::size_t count, DType dtype, int root) {
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

Handle Front::all_to_all_async(const void* in, void* out, std::size_t count, DType dtype) {
  return issue(
      {.kind = Collective::all_to_all, .dtype = dtype, .count = count, .in = in, .out = out});
}

void Front::barrier() {
  issue({.kind = Collective::barrier}).wait();
}

void Front::abort(const std::string& reason) noexcept {
  try {
    abort_group("rank " + std::to_string(rank()) + " aborted: " + reason);
  } catch (...) {
    // Building the message failed (out of memory): the short one fits without allocating.
    abort_group("a rank aborted");
  }
}

void Front::set_timeout(std::chrono::milliseconds timeout) {
  check_timeout(timeout);
  timeout_ms_.store(timeout.count(), std::memory_order_relaxed);
}

void Front::execute(Work& work) {
  const Call& mine = work.call();
  try {
    if (failed()) throw Error(reason());
    const auto deadline = Clock::now() + work.timeout();
    arrive(work, deadline);
    check_calls_agree();
    move_data(work, deadline);
    work.complete();
  } catch (const Error& e) {
    drop_transfers();
    work.fail(describe(mine) + " failed on rank " + std::to_string(rank()) + ": " + e.what());
  }
}

void Front::check_calls_agree() {
  // Every rank holds every rank's call, so every rank reaches the same verdict.
  const int n = size();
  for (int r = 1; r < n; ++r) {
    if (same_collective(call_of(0), call_of(r))) continue;
    std::vector<Call> calls(n);
    for (int q = 0; q < n; ++q) calls[q] = call_of(q);
    fail_group(mismatch_message(calls.data(), n));
    throw Error(reason());
  }
}

}  // namespace zerodp::comm
