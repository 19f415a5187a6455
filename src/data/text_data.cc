#include "zerodp/data/text_data.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <sys/stat.h>
#include <unistd.h>

#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/common/rng.h"
#include "zerodp/common/units.h"

namespace zerodp::data {

namespace {

// Sub-stream of the seed that draws train windows (model units use small stream numbers).
constexpr std::uint64_t kTrainWindowStream = 0x747261696e5f7769ULL;  // "train_wi"

std::size_t validation_bytes_of(std::size_t n, int percent) {
  return static_cast<std::size_t>(static_cast<unsigned __int128>(n) * percent / 100);
}

bool splits_fit(std::size_t n, std::size_t window, int percent) {
  const std::size_t val = validation_bytes_of(n, percent);
  return (percent == 100 || n - val >= window) && (percent == 0 || val >= window);
}

// The smallest corpus whose splits in use each hold one window (splits_fit is monotone in n).
std::size_t minimum_bytes(std::size_t window, int percent) {
  std::size_t lo = 1, hi = window * 101;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (splits_fit(mid, window, percent)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

}  // namespace

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  // A regular file only, opened without blocking: a path swapped for a FIFO or a device after
  // the caller checked it is refused here, not read forever.
  std::string why;
  const int fd = open_regular(path, why);
  if (fd < 0) throw Error("cannot read data file " + quote(path) + ": " + why);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(::fdopen(fd, "rb"), &std::fclose);
  if (!file) {
    ::close(fd);
    throw Error("cannot read data file " + quote(path) + ": " + std::strerror(errno));
  }
  std::vector<std::uint8_t> bytes;
  std::uint8_t buffer[1 << 16];
  std::size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) {
    bytes.insert(bytes.end(), buffer, buffer + got);
  }
  if (std::ferror(file.get())) {
    throw Error("cannot read data file " + quote(path) + ": " + std::strerror(errno));
  }
  return bytes;
}

std::vector<std::uint8_t> default_corpus_bytes(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) names.push_back(it->path().string());
  }
  if (ec) {
    throw Error("default corpus: cannot list '" + dir + "' (" + ec.message() +
                "); it comes with Debian's base-files package; pass " + field_ref("data") +
                " FILE instead");
  }
  if (names.empty()) {
    throw Error("default corpus: no regular file in '" + dir + "'; pass " + field_ref("data") +
                " FILE instead");
  }
  std::sort(names.begin(), names.end());  // byte order, not the directory's order
  std::vector<std::uint8_t> bytes;
  for (const auto& name : names) {
    const auto file = read_file_bytes(name);
    bytes.insert(bytes.end(), file.begin(), file.end());
  }
  return bytes;
}

std::uint64_t fnv1a64(std::span<const std::uint8_t> bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ULL;
  return h;
}

// Why pread and not a read-only mmap: a mapping of the whole file counts against
// RLIMIT_AS (a 2 GiB corpus under a 3 GiB limit leaves too little for the run), and a file cut
// short under a mapping kills the process with SIGBUS where pread returns a short count that
// becomes an Error naming the file. A window is seq_len + 1 bytes, one system call beside a
// forward pass over it; the page cache keeps a small corpus as fast as memory.
struct TextData::File {
  int fd = -1;
  // What the file was when opened; every read compares the file with it. The descriptor holds
  // the device and inode: a file renamed over the path later changes nothing read here. A
  // write in place moves the change time, which no one can set back (the modification time
  // can be, with touch -d or utimensat): a same-size rewrite with its time restored is seen.
  off_t size = 0;
  timespec modified{};
  timespec status_changed{};
  ~File() {
    if (fd >= 0) ::close(fd);
  }

  // Why the file is no longer what it was when opened, or empty while it is.
  std::string changed_because() const {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return "cannot stat it: " + errno_text();
    if (st.st_size != size) {
      return "it had " + units::format_with_commas(std::uint64_t(size)) +
             " bytes when the run began and has " +
             units::format_with_commas(std::uint64_t(st.st_size)) + " now";
    }
    if (st.st_mtim.tv_sec != modified.tv_sec || st.st_mtim.tv_nsec != modified.tv_nsec) {
      return "it was modified after the run began";
    }
    if (st.st_ctim.tv_sec != status_changed.tv_sec ||
        st.st_ctim.tv_nsec != status_changed.tv_nsec) {
      return "it was written or its times set after the run began: its change time moved";
    }
    return {};
  }

  // Reads [offset, offset + out.size()) into out; why the bytes do not count, or empty when
  // they do: only if the file is unchanged after the read (a check before could pass and the
  // bytes still change under the read).
  std::string read_into(std::size_t offset, std::span<std::uint8_t> out,
                        const std::string& source) const {
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t got =
          ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw Error("cannot read " + source + ": " + errno_text());
      if (got == 0) break;  // the end came early: the file shrank
      done += static_cast<std::size_t>(got);
    }
    std::string why = changed_because();
    if (why.empty() && done < out.size()) {
      why = "it ends before byte " + units::format_with_commas(offset + out.size()) + " of the " +
            units::format_with_commas(std::uint64_t(size)) + " its size says";
    }
    return why;
  }

  void read(std::size_t offset, std::span<std::uint8_t> out, const std::string& source) const {
    if (const std::string why = read_into(offset, out, source); !why.empty()) {
      throw Error(source + " changed after the run began (" + why +
                  "); its windows would no longer be the corpus the run started with");
    }
  }
};

TextData::TextData(std::vector<std::uint8_t> bytes, std::size_t seq_len, int validation_percent,
                   std::string source)
    : bytes_(std::move(bytes)),
      size_(bytes_.size()),
      fingerprint_(fnv1a64(bytes_)),
      seq_len_(seq_len),
      validation_percent_(validation_percent),
      validation_bytes_(0),
      source_(std::move(source)) {
  check_splits();
}

TextData::TextData(std::shared_ptr<const File> file, std::size_t size, std::size_t seq_len,
                   int validation_percent, std::string source, std::string seq_len_name)
    : file_(std::move(file)),
      size_(size),
      seq_len_(seq_len),
      validation_percent_(validation_percent),
      validation_bytes_(0),
      source_(std::move(source)),
      seq_len_name_(std::move(seq_len_name)) {
  check_splits();  // before the pass over the file: a file too small is refused at once
  // The fingerprint in one pass of 1 MiB chunks: the file is never held whole.
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  std::vector<std::uint8_t> chunk(std::min<std::size_t>(size_, std::size_t{1} << 20));
  for (std::size_t offset = 0; offset < size_; offset += chunk.size()) {
    const std::span<std::uint8_t> part(chunk.data(), std::min(chunk.size(), size_ - offset));
    if (const std::string why = file_->read_into(offset, part, source_); !why.empty()) {
      throw Error(source_ + " is not the same bytes from one read to the next (" + why +
                  "): a corpus must be a file that holds still, not one being written");
    }
    for (const std::uint8_t b : part) hash = (hash ^ b) * 0x100000001b3ULL;
  }
  fingerprint_ = hash;
}

void TextData::check_splits() {
  // What sets the window: the run's --seq-len, or a checkpoint's n_positions for eval.
  const std::string seq_len_named = seq_len_name_.empty() ? field_ref("seq_len") : seq_len_name_;
  if (seq_len_ < 1) throw InvalidArgument(seq_len_named + " must be at least 1");
  if (validation_percent_ < 0 || validation_percent_ > 100) {
    throw UsageError("validation split must be 0 to 100 percent of the data, got " +
                     std::to_string(validation_percent_));
  }
  if (!splits_fit(size_, window_bytes(), validation_percent_)) {
    throw Error(
        source_ + " has " + units::format_with_commas(size_) +
        (size_ == 1 ? " byte; " : " bytes; ") + seq_len_named + " " + std::to_string(seq_len_) +
        " with a " + std::to_string(validation_percent_) + " % validation split needs at least " +
        units::format_with_commas(minimum_bytes(window_bytes(), validation_percent_)) + " (" +
        units::format_with_commas(window_bytes()) + " bytes, one window, in each split)");
  }
  validation_bytes_ = validation_bytes_of(size_, validation_percent_);
}

TextData TextData::from_file(const std::string& path, std::size_t seq_len, int validation_percent,
                             std::string source, std::string seq_len_name) {
  if (source.empty()) source = "data file " + shown(path, 160);
  // A regular file only, opened without blocking (common/file.h): a FIFO or a device swapped
  // in for the path is refused here, not read forever.
  std::string why;
  auto file = std::make_shared<File>();
  file->fd = open_regular(path, why);
  if (file->fd < 0) throw Error("cannot read data file " + shown(path, 160) + ": " + why);
  struct stat st {};
  if (::fstat(file->fd, &st) != 0) {
    throw Error("cannot read data file " + shown(path, 160) + ": " + errno_text());
  }
  file->size = st.st_size;
  file->modified = st.st_mtim;
  file->status_changed = st.st_ctim;
  return TextData(std::move(file), static_cast<std::size_t>(st.st_size), seq_len,
                  validation_percent, std::move(source), std::move(seq_len_name));
}

TextData TextData::default_corpus(std::size_t seq_len, int validation_percent) {
  return TextData(default_corpus_bytes(), seq_len, validation_percent,
                  std::string("default corpus ") + kDefaultCorpusDir);
}

std::uint64_t TextData::validation_windows() const {
  return validation_bytes_ < window_bytes() ? 0 : (validation_bytes_ - 1) / seq_len_;
}

std::size_t TextData::window_start(Split split, std::uint64_t seed, std::uint64_t i) const {
  if (split == Split::train) {
    if (train_bytes() < window_bytes()) throw Error(source_ + ": no train split to draw from");
    const std::uint64_t starts = train_bytes() - seq_len_;
    // Uniform in [0, starts) by Lemire's multiply-shift (bias below starts / 2^64).
    const auto h = static_cast<unsigned __int128>(counter_hash(seed, kTrainWindowStream, i));
    return static_cast<std::size_t>((h * starts) >> 64);
  }
  const std::uint64_t windows = validation_windows();
  if (windows == 0) throw Error(source_ + ": no validation split to sweep");
  return train_bytes() + (i % windows) * seq_len_;
}

void TextData::window(Split split, std::uint64_t seed, std::uint64_t i,
                      std::span<std::uint8_t> out) const {
  ZERODP_CHECK(out.size() == window_bytes());
  const std::size_t start = window_start(split, seed, i);
  if (file_) {
    file_->read(start, out, source_);
  } else {
    std::memcpy(out.data(), bytes_.data() + start, window_bytes());
  }
}

std::string TextData::describe() const {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fingerprint_));
  return printable(source_) + ": " + units::format_with_commas(size_) + " bytes, fnv1a64 " + hash +
         ", train " + units::format_with_commas(train_bytes()) + " / validation " +
         units::format_with_commas(validation_bytes_) + " (last " +
         std::to_string(validation_percent_) + " %)";
}

}  // namespace zerodp::data
