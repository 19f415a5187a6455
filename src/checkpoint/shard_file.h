// A checkpoint shard open for reading, by offset, without loading it: what lets read() touch
// only the bytes of the range asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace zerodp::checkpoint {

class ShardFile {
 public:
  // Opens `path`, a shard of `elements` elements. Throws Error naming it.
  ShardFile(std::string path, std::uint64_t elements);
  ~ShardFile();
  ShardFile(ShardFile&& other) noexcept;
  ShardFile& operator=(ShardFile&& other) noexcept;

  const std::string& path() const { return path_; }
  std::uint64_t elements() const { return elements_; }
  int fd() const { return fd_; }

  // Reads `bytes` bytes at byte `offset` of the file into `dst`. Throws Error naming the file.
  void read_at(void* dst, std::size_t bytes, std::uint64_t offset) const;

 private:
  std::string path_;
  std::uint64_t elements_ = 0;
  int fd_ = -1;
};

}  // namespace zerodp::checkpoint
