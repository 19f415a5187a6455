#include "comm/work.h"

#include <exception>

#include "zerodp/common/error.h"

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
    if (queue_ == nullptr || !queue_->run_inline(*this)) {
      // No deadline here: whoever executes the work bounds every wait of its own by the
      // timeout, so the work always ends complete or failed.
      bell_.wait_until([this] { return !pending(); }, Clock::time_point::max(), kWaitSpin);
    }
    if (!waited_) {
      stats_->by_collective[static_cast<int>(call_.kind)].wait_seconds +=
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
  if (hooks_.run_inline) work->queue_ = this;
  enqueue(std::move(work));
}

void ProgressThread::enqueue(std::shared_ptr<Work> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
    ready_.store(!running_, std::memory_order_seq_cst);
  }
  submitted_.fetch_add(1, std::memory_order_seq_cst);
  wake_.ring();
}

void ProgressThread::drain() {
  const std::uint64_t target = submitted_.load(std::memory_order_seq_cst);
  done_.wait_until([&] { return executed_.load(std::memory_order_acquire) >= target; },
                   Clock::time_point::max());
}

std::shared_ptr<Work> ProgressThread::take(const Work* only) {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_ || queue_.empty()) return nullptr;
  if (only != nullptr && queue_.front().get() != only) return nullptr;
  std::shared_ptr<Work> work = std::move(queue_.front());
  queue_.pop_front();
  running_ = true;
  ready_.store(false, std::memory_order_seq_cst);
  return work;
}

void ProgressThread::execute(std::shared_ptr<Work> work) {
  try {
    work->executor()->execute(*work);
    if (work->pending()) {
      work->fail("internal error: " + describe(work->call()) + " was left pending");
    }
  } catch (const std::exception& e) {
    work->fail(e.what());
  } catch (...) {
    work->fail(describe(work->call()) + " failed with an unknown exception");
  }
  work.reset();
  bool more = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
    more = !queue_.empty();
    ready_.store(more, std::memory_order_seq_cst);
  }
  executed_.fetch_add(1, std::memory_order_release);
  done_.ring();
  if (more) wake_.ring();
}

bool ProgressThread::run_inline(Work& work) {
  std::shared_ptr<Work> mine = take(&work);
  if (!mine) return false;
  execute(std::move(mine));
  return true;
}

void ProgressThread::run(const std::function<void()>& fn) {
  // Adapts fn to the Executor interface.
  struct FunctionExecutor final : Executor {
    const std::function<void()>& fn;
    std::exception_ptr error;
    explicit FunctionExecutor(const std::function<void()>& f) : fn(f) {}
    void execute(Work& work) override {
      try {
        fn();
      } catch (...) {
        error = std::current_exception();
      }
      work.complete();
    }
  } executor(fn);
  auto work = std::make_shared<Work>(Call{}, std::chrono::milliseconds(0), &executor,
                                     std::make_shared<Stats>());
  enqueue(work);  // not submit(): run() promises the progress thread, never inline
  work->wait();
  if (executor.error) std::rethrow_exception(executor.error);
}

void ProgressThread::loop() {
  if (hooks_.on_start) hooks_.on_start();
  for (;;) {
    wake_.wait_until(
        [this] {
          return ready_.load(std::memory_order_seq_cst) || stop_.load(std::memory_order_acquire) ||
                 poked_.load(std::memory_order_acquire);
        },
        Clock::time_point::max());
    poked_.store(false, std::memory_order_seq_cst);
    if (hooks_.on_wake) hooks_.on_wake();
    if (std::shared_ptr<Work> work = take(nullptr)) {
      execute(std::move(work));
      continue;
    }
    if (stop_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty() && !running_) break;
    }
  }
  if (hooks_.on_stop) hooks_.on_stop();
}

}  // namespace zerodp::comm
