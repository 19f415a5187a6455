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
//  - Where the bytes are: a corpus given as bytes (the default corpus, tests) is held in
//    memory; a file is not. from_file() keeps the file open and reads each window's
//    seq_len + 1 bytes with pread when the window is drawn, so a corpus of any size trains in
//    the memory its windows take. Its fingerprint (fnv1a64 of every byte) is taken once, at
//    construction, in one pass of bounded chunks. For the same bytes both give the same
//    windows, split, sweep and fingerprint, bit for bit.
//  - A file is the bytes it held when it was opened: a window read that finds it shorter,
//    longer or written since (its size, modification time or change time differ) throws Error
//    naming the file and the change, never a window of other bytes. The open descriptor pins
//    the device and inode (a file renamed over the path is not read), and the change time
//    cannot be set back as the modification time can, so a same-size rewrite with its time
//    restored is seen. The times move in the kernel's clock ticks (a few ms): a rewrite within
//    one tick of the opening goes unseen.
//  - A pseudo-file (/proc, /sys: common/file.h) is refused when opened, and a file whose reads
//    fall short of its size during the fingerprint's pass is refused as not holding still.
// Thread-safety: immutable after construction; ranks share one TextData and draw windows from
// it at once (pread moves no shared file offset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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

  // A file, read window by window as drawn (the contract above). Error naming it when it
  // cannot be opened, is not a regular file, is too small, or changes during the fingerprint's
  // pass. `source` names it in messages; empty means "data file '<path>'". `seq_len_name`
  // names what set seq_len in the too-small message; empty means the field seq_len (--seq-len).
  static TextData from_file(const std::string& path, std::size_t seq_len,
                            int validation_percent = 10, std::string source = "",
                            std::string seq_len_name = "");
  // The default corpus, held in memory.
  static TextData default_corpus(std::size_t seq_len, int validation_percent = 10);

  std::size_t seq_len() const { return seq_len_; }
  std::size_t window_bytes() const { return seq_len_ + 1; }
  std::size_t size() const { return size_; }
  std::size_t train_bytes() const { return size_ - validation_bytes_; }
  std::size_t validation_bytes() const { return validation_bytes_; }
  int validation_percent() const { return validation_percent_; }
  // Windows in one sequential sweep of the validation split; 0 without a validation split.
  std::uint64_t validation_windows() const;
  // Offset in the corpus of window i of a split (the seed matters for train only).
  std::size_t window_start(Split split, std::uint64_t seed, std::uint64_t i) const;
  // Copies that window into out, which must hold window_bytes(). Throws Error for a split
  // that is empty (train at 100 %, validation at 0 %), and for a file that cannot be read or
  // is no longer the bytes it was (the message names the file and the change).
  void window(Split split, std::uint64_t seed, std::uint64_t i, std::span<std::uint8_t> out) const;
  // fnv1a64 of every byte, taken at construction: the corpus's fingerprint.
  std::uint64_t fingerprint() const { return fingerprint_; }

  // One line: source, size, fingerprint and the split, e.g. "default corpus
  // /usr/share/common-licenses: 237,320 bytes, fnv1a64 fe680f168f8bdd96, train 213,588 /
  // validation 23,732 (last 10 %)".
  std::string describe() const;

 private:
  struct File;  // an open file and what it was when opened; closed with the last copy
  TextData(std::shared_ptr<const File> file, std::size_t size, std::size_t seq_len,
           int validation_percent, std::string source, std::string seq_len_name);
  void check_splits();

  std::vector<std::uint8_t> bytes_;   // the corpus when it is held in memory
  std::shared_ptr<const File> file_;  // or the file its windows are read from
  std::size_t size_ = 0;
  std::uint64_t fingerprint_ = 0;
  std::size_t seq_len_;
  int validation_percent_;
  std::size_t validation_bytes_;
  std::string source_;
  std::string seq_len_name_;  // empty: field_ref("seq_len")
};

}  // namespace zerodp::data
