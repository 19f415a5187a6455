// TextData: a byte corpus, its train/validation split, and the windows a byte-level GPT reads.
//
// Bytes are the tokens (vocabulary 256), so any file works: text, code, binaries.
//  - Split: the LAST validation_percent % of the bytes (10 % by default, rounded down to a
//    whole byte) are the validation split, the rest before it the train split. No window
//    crosses the boundary, so validation bytes are never trained on.
//  - A window is seq_len + 1 consecutive bytes of one split: the model reads the first seq_len
//    and predicts every next byte.
//  - Train window i for a seed starts at a position drawn uniformly from the train split's
//    train_bytes() - seq_len possible starts by a counter-based hash of (seed, i): a pure
//    function of (seed, i), so any rank draws any window without reading the others.
//  - Validation window i is the (i mod validation_windows())-th of a sequential sweep: it
//    starts at i * seq_len, so consecutive windows share one byte and every validation byte
//    but the first is predicted exactly once per sweep. The seed plays no part.
//  - Each split in use (train when validation_percent < 100, validation when > 0) must hold
//    a window: seq_len + 1 bytes. A smaller corpus throws Error naming the minimum size.
// Thread-safety: immutable after construction; ranks share one TextData.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace zerodp::data {

enum class Split { train, validation };

// Where the default corpus comes from: a folder of Debian's base-files package, present on
// every Debian and Ubuntu system without a download.
inline constexpr const char* kDefaultCorpusDir = "/usr/share/common-licenses";

// The whole file. Throws Error naming the path and the cause when it cannot be read.
std::vector<std::uint8_t> read_file_bytes(const std::string& path);

// The default corpus: the regular files of `dir` in byte order of their names, concatenated
// as they are. Symbolic links (GPL -> GPL-3, ...) are skipped, so no text appears twice.
// About 237 kB of license texts on Debian 12; the bytes follow the base-files version, so
// TextData::describe() prints a hash to tell corpora apart. Throws Error when `dir` is
// missing or holds no regular file.
std::vector<std::uint8_t> default_corpus_bytes(const std::string& dir = kDefaultCorpusDir);

// 64-bit FNV-1a of the bytes: a short fingerprint of a corpus for logs (not a security hash).
std::uint64_t fnv1a64(std::span<const std::uint8_t> bytes);

class TextData {
 public:
  // Throws UsageError if seq_len < 1 or validation_percent is outside [0, 100]; Error if a
  // split in use is shorter than seq_len + 1 bytes (the message names `source`, the size and
  // the minimum).
  TextData(std::vector<std::uint8_t> bytes, std::size_t seq_len, int validation_percent = 10,
           std::string source = "in-memory corpus");

  // A file (Error when it cannot be read or is too small) or the default corpus.
  static TextData from_file(const std::string& path, std::size_t seq_len,
                            int validation_percent = 10);
  static TextData default_corpus(std::size_t seq_len, int validation_percent = 10);

  std::size_t seq_len() const { return seq_len_; }
  std::size_t window_bytes() const { return seq_len_ + 1; }
  std::size_t size() const { return bytes_.size(); }
  std::size_t train_bytes() const { return bytes_.size() - validation_bytes_; }
  std::size_t validation_bytes() const { return validation_bytes_; }
  int validation_percent() const { return validation_percent_; }
  // Windows in one sequential sweep of the validation split; 0 without a validation split.
  std::uint64_t validation_windows() const;
  // Offset in the corpus of window i of a split (the seed matters for train only).
  std::size_t window_start(Split split, std::uint64_t seed, std::uint64_t i) const;
  // Copies that window into out, which must hold window_bytes(). Throws Error for a split
  // that is empty (train at 100 %, validation at 0 %).
  void window(Split split, std::uint64_t seed, std::uint64_t i, std::span<std::uint8_t> out) const;
  std::span<const std::uint8_t> bytes() const { return bytes_; }

  // One line: source, size, fingerprint and the split, e.g. "default corpus
  // /usr/share/common-licenses: 237,320 bytes, fnv1a64 fe680f168f8bdd96, train 213,588 /
  // validation 23,732 (last 10 %)".
  std::string describe() const;

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t seq_len_;
  int validation_percent_;
  std::size_t validation_bytes_;
  std::string source_;
};

}  // namespace zerodp::data
