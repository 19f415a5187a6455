#include "checkpoint/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "checkpoint/format.h"
#include "zerodp/common/error.h"

namespace zerodp::checkpoint {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create " + tmp_ + ": " + errno_text());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_), ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write " + tmp_ + ": " + errno_text());
    p += n, bytes -= static_cast<std::size_t>(n);
  }
  hash_.update(data, static_cast<std::size_t>(p - static_cast<const char*>(data)));
}

std::string AtomicFile::commit() {
  if (::fsync(fd_) != 0) throw Error("cannot fsync " + tmp_ + ": " + errno_text());
  if (::close(fd_) != 0) {
    const std::string why = errno_text();
    fd_ = -1;
    ::unlink(tmp_.c_str());  // the destructor no longer owns it: leave no .tmp behind
    throw Error("cannot close " + tmp_ + ": " + why);
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp_.c_str());
    throw Error("cannot rename " + tmp_ + " to " + path_ + ": " + why);
  }
  return hash_.hex();
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) ::fsync(fd), ::close(fd);
}

}  // namespace zerodp::checkpoint
