#include "zerodp/common/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#if __has_include(<linux/magic.h>)  // not in a WebAssembly build, which has no /proc or /sys
#include <linux/magic.h>
#include <sys/vfs.h>
#define ZERODP_HAS_PSEUDO_FILE_SYSTEMS 1
#endif
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "zerodp/common/error.h"

namespace zerodp {
namespace {

// What a file of this type is, in the words the reasons use.
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a file";
  if (S_ISSOCK(mode)) return "is a socket, not a file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device, not a file";
  if (S_ISLNK(mode)) return "is a symbolic link";
  return "is not a regular file";
}

// The file systems whose files the kernel makes up when read (/proc, /sys and their kin): their
// size says nothing of what a read returns (4096 or 0 for a line of text), and two reads may
// differ. Such a file is no input of fixed bytes.
const char* pseudo_file_system([[maybe_unused]] int fd) {
#ifndef ZERODP_HAS_PSEUDO_FILE_SYSTEMS
  return nullptr;
#else
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return nullptr;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case PROC_SUPER_MAGIC:
      return "/proc";
    case SYSFS_MAGIC:
      return "/sys";
    case DEBUGFS_MAGIC:
      return "debugfs";
    case TRACEFS_MAGIC:
      return "tracefs";
    case SECURITYFS_MAGIC:
      return "securityfs";
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
      return "cgroup";
    case 0x62656570:  // CONFIGFS_MAGIC, which <linux/magic.h> lacks
      return "configfs";
    case EFIVARFS_MAGIC:
      return "efivarfs";
    case PSTOREFS_MAGIC:
      return "pstore";
    case BPF_FS_MAGIC:
      return "bpf";
    case SELINUX_MAGIC:
      return "selinuxfs";
    default:
      return nullptr;
  }
#endif
}

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A temporary name nobody else chose: two writers in one process, or two processes, never meet.
std::string temporary_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

std::string errno_text() {
  return std::strerror(errno);
}

std::string unreadable_because(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT ? "no such file" : errno_text();
  if (!S_ISREG(st.st_mode)) return kind_of(st.st_mode);
  if (::access(path.c_str(), R_OK) != 0) return errno_text();
  std::string why;
  const int fd = open_regular(path, why);
  if (fd >= 0) ::close(fd);
  return why;
}

int open_regular(const std::string& path, std::string& why) {
  // O_NONBLOCK: a FIFO opens at once whoever writes it; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why = errno == ENOENT ? "no such file" : errno_text();
    return -1;
  }
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  if (!stated || !S_ISREG(st.st_mode)) {
    why = stated ? kind_of(st.st_mode) : errno_text();
    ::close(fd);
    return -1;
  }
  if (const char* system = pseudo_file_system(fd)) {
    why = std::string("is a pseudo-file of ") + system +
          ", which the kernel makes up as it is read, not a file of fixed bytes";
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::optional<std::string> read_bounded(const std::string& path, std::uint64_t max_bytes,
                                        std::string& why) {
  const int fd = open_regular(path, why);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = errno_text();
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    // A file that grows while it is read is held to the same bound.
    if (text.size() + std::uint64_t(n) > max_bytes) {
      why = "is larger than " + std::to_string(max_bytes) + " bytes";
      ::close(fd);
      return std::nullopt;
    }
    text.append(buffer, std::size_t(n));
  }
  ::close(fd);
  return text;
}

std::string unreplaceable_because(const std::string& path) {
  if (path.empty() || path.back() == '/') return "is a folder's name, not a file's";
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return kind_of(st.st_mode);
  } else if (errno != ENOENT) {
    return errno_text();
  }
  const std::string dir = parent_of(path);
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    return "is in no folder that exists (" + quote(dir) + ")";
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return "is in a folder that cannot be written (" + quote(dir) + ": " + errno_text() + ")";
  }
  return {};
}

namespace {

// The deepest of `dir` and its ancestors that exists (lstat), and the names below it that do
// not, outermost first. Empty `existing` with `why` set when an lstat fails otherwise.
struct MissingFolders {
  std::string existing;
  std::vector<std::string> names;
  std::string why;
};

MissingFolders missing_folders(const std::string& dir) {
  MissingFolders m;
  std::filesystem::path at = std::filesystem::path(dir).lexically_normal();
  if (!at.has_filename()) at = at.parent_path();  // "a/b/"
  for (;;) {
    const std::string text = at.empty() ? "." : at.string();
    struct stat st {};
    if (::lstat(text.c_str(), &st) == 0) {
      m.existing = text;
      std::reverse(m.names.begin(), m.names.end());
      return m;
    }
    if (errno != ENOENT || !at.has_filename() || at.filename() == "..") {
      m.why = quote(text) + ": " + errno_text();
      return m;
    }
    m.names.push_back(at.filename().string());
    at = at.parent_path();
  }
}

}  // namespace

std::string folders_unmakeable_because(const std::string& dir) {
  const MissingFolders m = missing_folders(dir);
  if (!m.why.empty()) return m.why;
  struct stat st {};
  if (::lstat(m.existing.c_str(), &st) != 0) return quote(m.existing) + ": " + errno_text();
  if (m.names.empty()) {
    if (::stat(m.existing.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return quote(m.existing) + " is not a folder";
    }
    return {};
  }
  if (S_ISLNK(st.st_mode)) {
    return quote(m.existing) + " is a symbolic link, and folders are not made through a link";
  }
  if (!S_ISDIR(st.st_mode)) return quote(m.existing) + " is not a folder";
  if (::access(m.existing.c_str(), W_OK) != 0) {
    return "no folder can be made in " + quote(m.existing) + ": " + errno_text();
  }
  return {};
}

std::vector<std::string> make_folders(const std::string& dir) {
  if (const std::string why = folders_unmakeable_because(dir); !why.empty()) {
    throw Error("cannot make the folder " + quote(dir) + ": " + why);
  }
  const MissingFolders m = missing_folders(dir);
  std::vector<std::string> made;
  if (m.names.empty()) return made;
  // Each folder is made in the descriptor of the one before, opened without following a link:
  // a link put in place of a folder just made (or of the first that existed) is never entered.
  int at = ::open(m.existing.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  std::filesystem::path path(m.existing);
  auto fail = [&](const std::string& what) {
    const std::string why = errno_text();
    if (at >= 0) ::close(at);
    for (auto it = made.rbegin(); it != made.rend(); ++it) ::rmdir(it->c_str());
    throw Error("cannot make the folder " + quote(what) + ": " + why);
  };
  if (at < 0) fail(m.existing);
  for (const std::string& name : m.names) {
    path /= name;
    const bool new_here = ::mkdirat(at, name.c_str(), 0755) == 0;
    if (!new_here && errno != EEXIST) fail(path.string());
    if (new_here) made.push_back(path.string());
    const int next = ::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) fail(path.string());
    ::close(at);
    at = next;
  }
  ::close(at);
  return made;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(temporary_name(path_)) {
  if (const std::string why = unreplaceable_because(path_); !why.empty()) {
    throw Error("will not write " + quote(path_) + ": it " + why);
  }
  // O_EXCL | O_NOFOLLOW: a file or link planted under this name is an error, never opened.
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create " + quote(tmp_) + ": " + errno_text());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_), ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write " + quote(tmp_) + ": " + errno_text());
    p += n, bytes -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  auto fail = [this](const std::string& what) {
    const std::string why = errno_text();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());  // the destructor no longer owns it: leave no temporary behind
    throw Error(what + ": " + why);
  };
  if (::fsync(fd_) != 0) fail("cannot fsync " + quote(tmp_));
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("cannot close " + quote(tmp_));
  }
  fd_ = -1;
  // Again at the last moment: rename() replaces a link rather than follow it, but a link, a
  // FIFO or a device put there meanwhile is not zerodp's to replace.
  if (const std::string why = unreplaceable_because(path_); !why.empty()) {
    ::unlink(tmp_.c_str());
    throw Error("will not write " + quote(path_) + ": it " + why);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    fail("cannot rename " + quote(tmp_) + " to " + quote(path_));
  }
}

void write_file_atomically(const std::string& path, std::string_view text) {
  AtomicFile file(path);
  file.write(text);
  file.commit();
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) ::fsync(fd), ::close(fd);
}

}  // namespace zerodp
