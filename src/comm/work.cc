#include "comm/work.h"

#include <exception>

#include "zerodp/error.h"

namespace zerodp::comm {

void Work::complete() noexcept {
  status_.store(kDone, std::memory_order_release);
  bell_.ring();
}

void Work::fail(const std::string& message) noexcept {
  if (!pending()) return;
  try {
    error_ = message;
  } catch (...) {
    // Out of memory while failing: the status still tells the waiter.
  }
  status_.store(kFailed, std::memory_order_release);
  bell_.ring();
}

void Work::wait() {
  if (pending()) {
    const auto start = Clock::now();
    // No deadline here: the progress thread bounds every wait of its own by the timeout, so
    // the work always ends complete or failed.
    bell_.wait_until([this] { return !pending(); }, Clock::time_point::max());
    if (!waited_) {
      (*stats_).by_collective[static_cast<int>(call_.kind)].wait_seconds +=
          std::chrono::duration<double>(Clock::now() - start).count();
    }
  }
  waited_ = true;
  if (status_.load(std::memory_order_acquire) == kFailed) throw Error(error_);
}

ProgressThread::ProgressThread(Hooks hooks) : hooks_(std::move(hooks)) {
  thread_ = std::thread([this] { loop(); });
}

ProgressThread::~ProgressThread() {
  stop_.store(true, std::memory_order_seq_cst);
  wake_.ring();
  thread_.join();
}

void ProgressThread::submit(std::shared_ptr<Work> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  submitted_.fetch_add(1, std::memory_order_seq_cst);
  wake_.ring();
}

void ProgressThread::drain() {
  const std::uint64_t target = submitted_.load(std::memory_order_seq_cst);
  done_.wait_until([&] { return executed_.load(std::memory_order_acquire) >= target; },
                   Clock::time_point::max());
}

namespace {

// Adapts a function to the Executor interface, for ProgressThread::run.
class FunctionExecutor final : public Executor {
 public:
  explicit FunctionExecutor(const std::function<void()>& fn) : fn_(fn) {}
  void execute(Work& work) override {
    try {
      fn_();
    } catch (...) {
      error_ = std::current_exception();
    }
    work.complete();
  }
  std::exception_ptr error() const { return error_; }

 private:
  const std::function<void()>& fn_;
  std::exception_ptr error_;
};

}  // namespace

void ProgressThread::run(const std::function<void()>& fn) {
  FunctionExecutor executor(fn);
  auto work = std::make_shared<Work>(Call{}, std::chrono::milliseconds(0), &executor,
                                     std::make_shared<Stats>());
  submit(work);
  work->wait();
  if (executor.error()) std::rethrow_exception(executor.error());
}

void ProgressThread::loop() {
  if (hooks_.on_start) hooks_.on_start();
  for (;;) {
    wake_.wait_until(
        [this] {
          return submitted_.load(std::memory_order_acquire) >
                     executed_.load(std::memory_order_relaxed) ||
                 stop_.load(std::memory_order_acquire) || poked_.load(std::memory_order_acquire);
        },
        Clock::time_point::max());
    poked_.store(false, std::memory_order_seq_cst);
    if (hooks_.on_wake) hooks_.on_wake();
    std::shared_ptr<Work> work;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!queue_.empty()) {
        work = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    if (!work) {
      if (stop_.load(std::memory_order_acquire)) break;
      continue;
    }
    try {
      work->executor()->execute(*work);
      if (work->pending())
        work->fail("internal error: " + describe(work->call()) + " was left pending");
    } catch (const std::exception& e) {
      work->fail(e.what());
    } catch (...) {
      work->fail(describe(work->call()) + " failed with an unknown exception");
    }
    work.reset();
    executed_.fetch_add(1, std::memory_order_release);
    done_.ring();
  }
  if (hooks_.on_stop) hooks_.on_stop();
}

}  // namespace zerodp::comm
