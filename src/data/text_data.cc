#include "zerodp/data/text_data.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

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

TextData::TextData(std::vector<std::uint8_t> bytes, std::size_t seq_len, int validation_percent,
                   std::string source)
    : bytes_(std::move(bytes)),
      seq_len_(seq_len),
      validation_percent_(validation_percent),
      validation_bytes_(0),
      source_(std::move(source)) {
  if (seq_len < 1) throw InvalidArgument(field_ref("seq_len") + " must be at least 1");
  if (validation_percent < 0 || validation_percent > 100) {
    throw UsageError("validation split must be 0 to 100 percent of the data, got " +
                     std::to_string(validation_percent));
  }
  if (!splits_fit(bytes_.size(), window_bytes(), validation_percent)) {
    throw Error(source_ + " has " + units::format_with_commas(bytes_.size()) + " bytes; " +
                field_ref("seq_len") + " " + std::to_string(seq_len) + " with a " +
                std::to_string(validation_percent) + " % validation split needs at least " +
                units::format_with_commas(minimum_bytes(window_bytes(), validation_percent)) +
                " (" + units::format_with_commas(window_bytes()) +
                " bytes, one window, in each split)");
  }
  validation_bytes_ = validation_bytes_of(bytes_.size(), validation_percent);
}

TextData TextData::from_file(const std::string& path, std::size_t seq_len, int validation_percent) {
  return TextData(read_file_bytes(path), seq_len, validation_percent, "data file '" + path + "'");
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
  std::memcpy(out.data(), bytes_.data() + start, window_bytes());
}

std::string TextData::describe() const {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a64(bytes_)));
  return printable(source_) + ": " + units::format_with_commas(bytes_.size()) + " bytes, fnv1a64 " +
         hash + ", train " + units::format_with_commas(train_bytes()) + " / validation " +
         units::format_with_commas(validation_bytes_) + " (last " +
         std::to_string(validation_percent_) + " %)";
}

}  // namespace zerodp::data
