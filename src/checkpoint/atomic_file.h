// Writing files so that a crash at any moment leaves them whole or absent: what makes a
// checkpoint complete or absent (include/zerodp/checkpoint/checkpoint.h).
#pragma once

#include <cstddef>
#include <string>

#include "zerodp/common/sha256.h"

namespace zerodp::checkpoint {

// A file written under a temporary name (path + ".tmp"), fsynced and renamed into place: it is
// there whole or not at all. Destroyed before commit(), it removes the temporary file.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // throws Error naming the file
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t bytes);  // throws Error naming the file
  // Puts the file in place and returns its SHA-256. Throws Error naming the file.
  std::string commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  Sha256 hash_;
};

// Makes the entries of `dir` durable (a rename is only once its folder is synced). Best effort:
// a folder that cannot be opened is left as it is.
void fsync_dir(const std::string& dir);

}  // namespace zerodp::checkpoint
