// Files a user names, which may be hostile: a path may be a symbolic link, a FIFO, a device
// such as /dev/zero, a folder, or a name a second process plants while zerodp runs. zerodp
// runs as root on many machines, where a write through a planted link can destroy any file.
//
// Contract:
//  - Reading: read_bounded() reads only a regular file (a link to one is followed: reading
//    writes nothing), opens it without blocking (a FIFO without a writer cannot hang the
//    open), and reads at most `max_bytes`, so /dev/zero, /dev/urandom or a FIFO is refused
//    with a reason instead of read until memory runs out. A pseudo-file (/proc, /sys) is
//    refused for what it is.
//  - Writing: AtomicFile creates its temporary file beside the target under a name of its own
//    (the target's name, ".tmp-", the process id and a counter), with O_CREAT | O_EXCL |
//    O_NOFOLLOW, so it never opens a file or a link someone planted. It replaces the target
//    only if nothing is there or a regular file is: a link, a FIFO, a device or a folder at
//    the target is refused, never replaced and never written through. The file appears whole
//    or not at all (fsync, then rename).
//  - Reasons are a few words a user acts on ("is a symbolic link", "is a FIFO (named pipe),
//    not a file"); callers put them in their own messages, naming their input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp {

// Why `path` cannot be read as a file, or empty when it can: "no such file", "is a
// directory", "is a FIFO (named pipe), not a file", "is a device, not a file", "is a socket,
// not a file", "is a pseudo-file of /sys, ...", or the system's reason.
std::string unreadable_because(const std::string& path);

// A descriptor for reading the regular file at `path` (a link to one is followed), or -1 with
// the reason in `why`. The open does not block on a FIFO; anything but a regular file is
// refused before a byte is read, and so is a pseudo-file of /proc, /sys, debugfs, cgroup and
// their kin: the kernel makes its bytes up as it is read, its size says nothing of them.
int open_regular(const std::string& path, std::string& why);

// The whole of the regular file at `path` when it holds at most `max_bytes`; otherwise nullopt
// with the reason in `why` (unreadable_because()'s, or "is larger than N bytes").
std::optional<std::string> read_bounded(const std::string& path, std::uint64_t max_bytes,
                                        std::string& why);

// Why zerodp must not replace `path` with a file of its own, or empty when it may: nothing is
// there, or a regular file, in a folder that exists and can be written. "is a symbolic link",
// "is a FIFO (named pipe)", "is a device", "is a folder", "is in no folder that exists",
// "is in a folder that cannot be written: ...".
std::string unreplaceable_because(const std::string& path);

// Why make_folders(dir) would fail, or empty when it would not: the deepest part of `dir` that
// exists must be a folder that can be written, and not a symbolic link when a folder is to be
// made in it ("'a' is a symbolic link, and folders are not made through a link").
std::string folders_unmakeable_because(const std::string& dir);

// Makes the folders of `dir` that do not exist (as mkdir -p), each inside the one before it
// by its descriptor, opened without following a link: a link put in place of a folder just
// made is never written through. Returns the folders it made, outermost first (for the caller
// to remove should what it writes in them fail). Throws Error naming the folder and the cause,
// having removed what it made.
std::vector<std::string> make_folders(const std::string& dir);

// A file written under a temporary name of its own and renamed into place: it is there whole
// or not at all. Destroyed before commit(), it removes its temporary file.
class AtomicFile {
 public:
  // Throws Error naming the file when unreplaceable_because() says why, or the temporary file
  // cannot be created.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t bytes);  // throws Error naming the file
  void write(std::string_view text) { write(text.data(), text.size()); }
  // Puts the file in place (checking the target again). Throws Error naming the file.
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};

// `text` written to `path` as AtomicFile writes it.
void write_file_atomically(const std::string& path, std::string_view text);

// Makes the entries of `dir` durable (a rename is only once its folder is synced). Best effort:
// a folder that cannot be opened is left as it is.
void fsync_dir(const std::string& dir);

// The system's reason for the last failed call (errno), as a message ends with it.
std::string errno_text();

}  // namespace zerodp
