// Work and ProgressThread: how a collective is issued by a rank's thread, carried out on a
// progress thread, and waited for — the machinery under every backend's Handle.
//
// A Work is created by the front's *_async (front.h) on the rank's thread, queued, executed
// (which must leave it complete or failed, never pending), and waited on by the rank's thread
// through its Handle. Works of one queue run one at a time, in issue order. Usually the progress
// thread runs them; with Hooks::run_inline, a rank's thread that waits for a work nobody has
// started yet, at the head of the queue, runs it itself: a synchronous collective then costs
// no hand-over to the progress thread and back (two thread wake-ups, tens of microseconds on
// a busy machine). Its stats block is the communicator's, shared so that a handle may outlive
// the communicator.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "comm/bell.h"
#include "comm/call.h"
#include "zerodp/comm/communicator.h"

namespace zerodp::comm {

class Work;
class ProgressThread;

// Carries out Works; implemented once, by the Front (front.h), for every backend.
class Executor {
 public:
  virtual ~Executor() = default;
  // Leaves work complete or failed; may throw, which fails the work with the message.
  virtual void execute(Work& work) = 0;
};

class Work final : public Handle::State {
 public:
  Work(const Call& call, std::chrono::milliseconds timeout, Executor* executor,
       std::shared_ptr<Stats> stats)
      : call_(call), timeout_(timeout), executor_(executor), stats_(std::move(stats)) {}

  const Call& call() const { return call_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  Executor* executor() const { return executor_; }

  // The outcome, once, by whoever executes the work. Wakes the waiter.
  void complete() noexcept;
  void fail(const std::string& message) noexcept;
  bool pending() const { return status_.load(std::memory_order_acquire) == kPending; }

  // Rank thread.
  void wait() override;
  bool completed() override { return !pending(); }

 private:
  friend class ProgressThread;
  static constexpr std::uint32_t kPending = 0, kDone = 1, kFailed = 2;
  static constexpr int kWaitSpin = 500;  // the waiter spins less: collectives take a while
  const Call call_;
  const std::chrono::milliseconds timeout_;
  Executor* const executor_;
  std::shared_ptr<Stats> stats_;
  ProgressThread* queue_ = nullptr;  // set when queued on a thread that allows inline runs
  std::string error_;                // written before status_ turns kFailed
  std::atomic<std::uint32_t> status_{kPending};
  Bell bell_;
  bool waited_ = false;  // wait time is counted once
};

// What a ProgressThread runs besides works: on_start / on_stop on the thread before the first
// and after the last work (MPI initialises and finalises there), on_wake whenever the thread
// wakes, between works.
struct ProgressHooks {
  std::function<void()> on_start, on_wake, on_stop;
  bool run_inline = false;  // see the file comment; not for MPI, whose calls stay on one thread
};

// One thread that executes queued Works in order.
class ProgressThread {
 public:
  using Hooks = ProgressHooks;
  explicit ProgressThread(Hooks hooks = {});
  // Executes what is queued, then stops.
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  void submit(std::shared_ptr<Work> work);
  // Blocks until every submitted work has been executed.
  void drain();
  // Runs fn on the progress thread, after the works queued before it, and returns when it
  // has; rethrows what fn throws. Must not be called from the progress thread itself.
  void run(const std::function<void()>& fn);
  // Wakes the thread so that it runs hooks.on_wake.
  void poke() noexcept {
    poked_.store(true, std::memory_order_seq_cst);
    wake_.ring();
  }

 private:
  friend class Work;
  void loop();
  void enqueue(std::shared_ptr<Work> work);
  // Takes the head of the queue if nothing runs (and, if `only` is set, if it is that work).
  std::shared_ptr<Work> take(const Work* only);
  void execute(std::shared_ptr<Work> work);
  // Called by Work::wait on the rank's thread: runs work here if it is next and idle.
  bool run_inline(Work& work);

  Hooks hooks_;
  std::mutex mu_;
  std::deque<std::shared_ptr<Work>> queue_;  // guarded by mu_
  bool running_ = false;                     // guarded by mu_: a work is executing
  std::atomic<std::uint64_t> submitted_{0}, executed_{0};
  std::atomic<bool> ready_{false};  // queue non-empty and nothing running (a hint for waking)
  std::atomic<bool> stop_{false};
  std::atomic<bool> poked_{false};
  Bell wake_;  // rung on submit, poke, stop and when an inline run ends with work queued
  Bell done_;  // rung after each executed work
  std::thread thread_;
};

}  // namespace zerodp::comm
