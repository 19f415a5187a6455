#include "checkpoint/shard_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include "checkpoint/format.h"
#include "zerodp/common/error.h"

namespace zerodp::checkpoint {

ShardFile::ShardFile(std::string path, std::uint64_t elements)
    : path_(std::move(path)), elements_(elements) {
  std::string why;
  fd_ = open_regular(path_, why);
  if (fd_ < 0) throw Error("cannot open " + path_ + ": " + why);
}

ShardFile::~ShardFile() {
  if (fd_ >= 0) ::close(fd_);
}

ShardFile::ShardFile(ShardFile&& other) noexcept
    : path_(std::move(other.path_)),
      elements_(other.elements_),
      fd_(std::exchange(other.fd_, -1)) {}

ShardFile& ShardFile::operator=(ShardFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    elements_ = other.elements_;
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void ShardFile::read_at(void* dst, std::size_t bytes, std::uint64_t offset) const {
  char* out = static_cast<char*>(dst);
  auto at = static_cast<off_t>(offset);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd_, out, bytes, at);
    if (got <= 0) throw Error("cannot read " + path_ + ": " + errno_text());
    out += got, at += got, bytes -= static_cast<std::size_t>(got);
  }
}

}  // namespace zerodp::checkpoint
