#include "zerodp/run/stop_signal.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace zerodp::run::stop_signal {
namespace {

std::atomic<int> first_signal{0};   // lock-free, so a handler may write it
std::atomic<bool> run_over{false};  // see ending()
bool stderr_is_tty = false;         // read once: isatty is not async-signal-safe

void say(const char* text) {
  const ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;  // nothing to do from a handler if stderr is gone
}

void on_signal(int sig) {
  const int saved_errno = errno;  // the interrupted code may be about to read it
  int none = 0;
  if (sig == SIGPIPE) {
    // The run's own write to a reader that has gone (`train | head -1`), raised again by every
    // write after it: a request to stop the first time, nothing after. Its progress is lost
    // with the reader; its checkpoint and loss curve are not.
    if (!run_over.load() && first_signal.compare_exchange_strong(none, sig)) {
      say("zerodp: SIGPIPE: the reader of the output is gone; stopping after this step "
          "(checkpoint and loss curve follow)\n");
    }
    errno = saved_errno;
    return;
  }
  if (run_over.load() || !first_signal.compare_exchange_strong(none, sig)) {
    // The second signal: the user (or the scheduler) will not wait. Die of it, as if we had
    // never handled it, so the parent sees the signal.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  if (stderr_is_tty) say("\n");  // past a progress bar drawn in place
  say(sig == SIGINT ? "zerodp: SIGINT" : "zerodp: SIGTERM");
  say(": stopping after this step (checkpoint and loss curve follow); send it again to stop "
      "at once\n");
  errno = saved_errno;
}

}  // namespace

void install() {
  stderr_is_tty = isatty(STDERR_FILENO) == 1;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads, writes and waits in flight carry on
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGPIPE, &action, nullptr);
  // A shell starts background jobs with SIGINT ignored, so that Ctrl-C stops only the
  // foreground: keep it so.
  struct sigaction before {};
  sigaction(SIGINT, nullptr, &before);
  if (before.sa_handler != SIG_IGN) sigaction(SIGINT, &action, nullptr);
}

void ending() {
  run_over.store(true);
}

int received() {
  return first_signal.load();
}

const char* name(int signal) {
  return signal == SIGINT    ? "SIGINT"
         : signal == SIGTERM ? "SIGTERM"
         : signal == SIGPIPE ? "SIGPIPE"
                             : "a signal";
}

int exit_status(int signal) {
  return 128 + signal;
}

}  // namespace zerodp::run::stop_signal
