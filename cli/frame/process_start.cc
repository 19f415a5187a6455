#include "process_start.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace zerodp::cli {

void start_process() {
  std::signal(SIGXFSZ, SIG_IGN);
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open() returns the lowest free number, which is fd: 0, 1 and 2 are filled in order.
    const int opened = ::open("/dev/null", O_RDONLY);
    if (opened == fd) continue;
    if (opened >= 0) ::close(opened);
    static const char kSay[] =
        "zerodp: error: a standard stream (0, 1 or 2) is closed and /dev/null cannot be opened "
        "to stand in for it\n";
    if (::fcntl(2, F_GETFD) != -1) {
      const ssize_t ignored = ::write(2, kSay, sizeof kSay - 1);
      (void)ignored;
    }
    ::_exit(1);
  }
}

}  // namespace zerodp::cli
