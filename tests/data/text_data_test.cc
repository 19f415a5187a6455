#include "zerodp/data/text_data.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerodp/common/error.h"
#include "zerodp/data/samples.h"

namespace zerodp::data {
namespace {

std::vector<std::uint8_t> counting_bytes(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 37 + i / 256);
  return v;
}

std::string error_of(std::vector<std::uint8_t> bytes, std::size_t seq_len, int percent) {
  try {
    TextData data(std::move(bytes), seq_len, percent, "corpus.txt");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TextData, LastTenPercentIsValidation) {
  const TextData data(counting_bytes(1005), 16);
  EXPECT_EQ(data.validation_bytes(), 100u);  // 10 % of 1005, rounded down
  EXPECT_EQ(data.train_bytes(), 905u);
  EXPECT_EQ(data.validation_percent(), 10);
  EXPECT_EQ(data.window_bytes(), 17u);
  EXPECT_NE(data.describe().find("(last 10 %)"), std::string::npos) << data.describe();
}

TEST(TextData, TrainWindowsArePureFunctionsOfSeedAndIndexInsideTheTrainSplit) {
  const auto bytes = counting_bytes(2000);
  const TextData data(bytes, 32);
  std::vector<std::uint8_t> w(33), again(33);
  std::set<std::size_t> starts;
  for (std::uint64_t i = 0; i < 500; ++i) {
    const std::size_t start = data.window_start(Split::train, 7, i);
    ASSERT_LE(start + 33, data.train_bytes());  // never crosses into validation
    starts.insert(start);
    data.window(Split::train, 7, i, w);
    ASSERT_TRUE(std::equal(w.begin(), w.end(), bytes.begin() + start));
  }
  EXPECT_GT(starts.size(), 300u);  // spread over the 1768 possible starts
  // Any order, any copy: the same window.
  const TextData copy(bytes, 32);
  copy.window(Split::train, 7, 123, again);
  data.window(Split::train, 7, 123, w);
  EXPECT_EQ(w, again);
  // Another seed, other windows.
  int same = 0;
  for (std::uint64_t i = 0; i < 100; ++i) {
    same += data.window_start(Split::train, 7, i) == data.window_start(Split::train, 8, i);
  }
  EXPECT_LT(same, 5);
}

TEST(TextData, ValidationIsASequentialSweepThatWraps) {
  const auto bytes = counting_bytes(1000);
  const TextData data(bytes, 10);            // validation: bytes [900, 1000)
  EXPECT_EQ(data.validation_windows(), 9u);  // (100 - 1) / 10
  for (std::uint64_t i = 0; i < 9; ++i) {
    EXPECT_EQ(data.window_start(Split::validation, 0, i), 900 + 10 * i);
    EXPECT_EQ(data.window_start(Split::validation, 12345, i), 900 + 10 * i);  // no seed
  }
  EXPECT_EQ(data.window_start(Split::validation, 0, 9), 900u);  // wraps
  EXPECT_LE(data.window_start(Split::validation, 0, 8) + 11, 1000u);
}

TEST(TextData, TooSmallCorporaNameTheMinimum) {
  // seq_len 10: each split needs 11 bytes; with 10 % for validation that is 110 bytes.
  EXPECT_EQ(error_of(counting_bytes(110), 10, 10), "");
  const std::string e = error_of(counting_bytes(109), 10, 10);
  EXPECT_NE(e.find("corpus.txt has 109 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("seq_len 10"), std::string::npos) << e;
  EXPECT_NE(e.find("at least 110"), std::string::npos) << e;
  // Without a validation split, one window is enough.
  EXPECT_EQ(error_of(counting_bytes(11), 10, 0), "");
  EXPECT_NE(error_of(counting_bytes(10), 10, 0).find("at least 11"), std::string::npos);
  // The whole file as validation (evaluation of a file).
  const TextData all(counting_bytes(21), 10, 100);
  EXPECT_EQ(all.validation_windows(), 2u);
  std::vector<std::uint8_t> w(11);
  EXPECT_THROW(all.window(Split::train, 0, 0, w), Error);
  EXPECT_THROW(TextData(counting_bytes(100), 10, 101), UsageError);
  EXPECT_THROW(TextData(counting_bytes(100), 0, 10), UsageError);
}

TEST(TextData, FilesAreReadWholeAndMissingOnesAreErrors) {
  const auto path = std::filesystem::temp_directory_path() / "zerodp_text_data_test.bin";
  std::vector<std::uint8_t> bytes = counting_bytes(70000);  // more than one read buffer
  bytes[5] = 0;                                             // any byte, NUL included
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<long>(bytes.size()));
  }
  EXPECT_EQ(read_file_bytes(path.string()), bytes);
  const TextData data = TextData::from_file(path.string(), 64);
  EXPECT_EQ(data.size(), bytes.size());
  std::filesystem::remove(path);
  try {
    TextData::from_file(path.string(), 64);
    FAIL() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read data file"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos);
  }
}

TEST(TextData, DefaultCorpusIsTheSortedRegularFilesOfAFolder) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "zerodp_default_corpus_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const char* name, const char* text) { std::ofstream(dir / name) << text; };
  write("b", "BB");
  write("a", "A");
  write("C", "c");  // 'C' < 'a' < 'b' in byte order
  fs::create_symlink(dir / "a", dir / "link-to-a");
  const auto bytes = default_corpus_bytes(dir.string());
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "cABB");
  fs::remove_all(dir);
  EXPECT_THROW(default_corpus_bytes(dir.string()), Error);
}

TEST(TextData, DefaultCorpusOfThisMachine) {
  if (!std::filesystem::is_directory(kDefaultCorpusDir)) GTEST_SKIP() << "no " << kDefaultCorpusDir;
  const TextData data = TextData::default_corpus(128);
  std::printf("  %s\n", data.describe().c_str());
  EXPECT_GT(data.size(), 100000u);
  EXPECT_EQ(default_corpus_bytes(), default_corpus_bytes());  // deterministic
}

TEST(TextData, Fnv1aOfKnownInputs) {
  EXPECT_EQ(fnv1a64({}), 0xcbf29ce484222325ULL);
  const std::uint8_t a[] = {'a'};
  EXPECT_EQ(fnv1a64(a), 0xaf63dc4c8601ec8cULL);
}

void write_bytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<long>(bytes.size()));
}

std::string read_error(const TextData& data, Split split, std::uint64_t i) {
  std::vector<std::uint8_t> out(data.window_bytes());
  try {
    data.window(split, 1, i, out);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A file is read window by window, the bytes in memory as they are: both give the same
// windows, split, sweep, samples and fingerprint, so a run's bits do not depend on which.
TEST(TextData, AFileGivesTheWindowsAndFingerprintOfItsBytesInMemory) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("zerodp_text_file_" + std::to_string(::getpid()) + ".bin");
  // 2.5 MB: more than one chunk of the fingerprint's pass over the file.
  std::vector<std::uint8_t> bytes = counting_bytes(2'500'003);
  for (std::size_t i = 0; i < bytes.size(); i += 4099) bytes[i] = 0;
  write_bytes(path, bytes);
  for (const std::size_t seq_len :
       {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1000}}) {
    for (const int percent : {0, 10, 37, 100}) {
      const auto file =
          std::make_shared<const TextData>(TextData::from_file(path.string(), seq_len, percent));
      const auto memory = std::make_shared<const TextData>(bytes, seq_len, percent);
      ASSERT_EQ(file->size(), bytes.size());
      EXPECT_EQ(file->fingerprint(), fnv1a64(bytes));
      EXPECT_EQ(file->fingerprint(), memory->fingerprint());
      EXPECT_EQ(file->train_bytes(), memory->train_bytes());
      EXPECT_EQ(file->validation_windows(), memory->validation_windows());
      const std::string tail = memory->describe().substr(memory->describe().find(':'));
      EXPECT_EQ(file->describe().substr(file->describe().find(':')), tail);
      for (const std::uint64_t seed : {0ULL, 1ULL, 42ULL, 0x8000000000000005ULL}) {
        const TextWindows from_file(file, seed), from_memory(memory, seed);
        Batch a, b;
        for (const Split split : {Split::train, Split::validation}) {
          if ((split == Split::train && percent == 100) ||
              (split == Split::validation && percent == 0)) {
            EXPECT_THROW(from_file.draw(split, 0, 1, a), Error);
            continue;
          }
          from_file.draw(split, 1000, 64, a);
          from_memory.draw(split, 1000, 64, b);
          EXPECT_EQ(a.tokens, b.tokens) << seq_len << " " << percent << " " << seed;
          for (std::uint64_t i = 0; i < 64; ++i) {
            const std::size_t start = memory->window_start(split, seed, 1000 + i);
            EXPECT_EQ(file->window_start(split, seed, 1000 + i), start);
            EXPECT_TRUE(std::equal(a.tokens.begin() + i * (seq_len + 1),
                                   a.tokens.begin() + (i + 1) * (seq_len + 1),
                                   bytes.begin() + start));
          }
        }
      }
    }
  }
  // A whole validation sweep, window after window, and past its end (it wraps).
  const auto file = std::make_shared<const TextData>(TextData::from_file(path.string(), 997));
  const auto memory = std::make_shared<const TextData>(bytes, 997);
  Batch a, b;
  const auto sweep = file->validation_windows() + 3;
  TextWindows(file, 0).draw(Split::validation, 0, sweep, a);
  TextWindows(memory, 0).draw(Split::validation, 0, sweep, b);
  EXPECT_EQ(a.tokens, b.tokens);
  std::filesystem::remove(path);
}

TEST(TextData, AFileThatShrinksOrChangesAfterTheStartIsAnErrorNamingIt) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("zerodp_text_shrink_" + std::to_string(::getpid()) + ".bin");
  const std::vector<std::uint8_t> bytes = counting_bytes(100'000);
  write_bytes(path, bytes);
  const TextData data = TextData::from_file(path.string(), 64);
  EXPECT_EQ(read_error(data, Split::validation, 0), "");
  std::filesystem::resize_file(path, 50'000);  // the validation split is gone
  const std::string error = read_error(data, Split::validation, 0);
  EXPECT_NE(error.find(path.string()), std::string::npos) << error;
  EXPECT_NE(error.find("100,000 bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("50,000"), std::string::npos) << error;
  // A window still inside the shorter file is refused too: the corpus is not what it was.
  const std::string train_error = read_error(data, Split::train, 0);
  EXPECT_NE(train_error.find(path.string()), std::string::npos) << train_error;

  // The same size, another byte: seen by the file's modification time, which the clock moves
  // in ticks of a few milliseconds.
  write_bytes(path, bytes);
  const TextData again = TextData::from_file(path.string(), 64);
  EXPECT_EQ(read_error(again, Split::train, 0), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(12345);
    out.put('x');
  }
  const std::string changed = read_error(again, Split::train, 0);
  EXPECT_NE(changed.find(path.string()), std::string::npos) << changed;
  EXPECT_NE(changed.find("changed"), std::string::npos) << changed;
  std::filesystem::remove(path);
}

// A rewrite of the same size whose modification time is then set back (touch -d, utimensat), as
// a process may do while the run is held with SIGSTOP: the change time, which no one can set
// back, moves, and the window is refused.
TEST(TextData, ASameSizeRewriteWithItsModificationTimeSetBackIsSeen) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("zerodp_text_touch_" + std::to_string(::getpid()) + ".bin");
  const std::vector<std::uint8_t> bytes = counting_bytes(100'000);
  write_bytes(path, bytes);
  struct stat opened {};
  ASSERT_EQ(::stat(path.c_str(), &opened), 0);
  const TextData data = TextData::from_file(path.string(), 64);
  EXPECT_EQ(read_error(data, Split::train, 0), "");
  // Rewritten until the change time has moved past the opening's (the clock moves in ticks of
  // a few milliseconds); each time the modification time is put back as it was.
  struct stat now {};
  for (int attempt = 0; attempt < 400; ++attempt) {
    {
      std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
      out.seekp(12345);
      out.put(static_cast<char>(attempt));
    }
    const timespec times[2] = {opened.st_atim, opened.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    ASSERT_EQ(::stat(path.c_str(), &now), 0);
    if (now.st_ctim.tv_sec != opened.st_ctim.tv_sec ||
        now.st_ctim.tv_nsec != opened.st_ctim.tv_nsec) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(now.st_size, opened.st_size);
  ASSERT_EQ(now.st_mtim.tv_nsec, opened.st_mtim.tv_nsec);
  ASSERT_NE(now.st_ctim.tv_nsec + now.st_ctim.tv_sec * 1'000'000'000LL,
            opened.st_ctim.tv_nsec + opened.st_ctim.tv_sec * 1'000'000'000LL);
  const std::string changed = read_error(data, Split::train, 0);
  EXPECT_NE(changed.find(path.string()), std::string::npos) << changed;
  EXPECT_NE(changed.find("change time moved"), std::string::npos) << changed;
  std::filesystem::remove(path);
}

// A file of /proc or /sys says a size (4096, or 0) that its reads do not give: refused as what
// it is when opened, not as a file "changed after the run began" before any run began.
TEST(TextData, APseudoFileIsRefusedForWhatItIs) {
  for (const std::string path :
       {"/proc/self/status", "/sys/devices/system/cpu/online", "/proc/self/environ"}) {
    ASSERT_TRUE(std::filesystem::is_regular_file(path)) << path;
    try {
      (void)TextData::from_file(path, 1, 10);
      ADD_FAILURE() << path << " was taken as a corpus";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("is a pseudo-file of /"), std::string::npos) << message;
      EXPECT_EQ(message.find("changed after the run began"), std::string::npos) << message;
    }
  }
  const std::string thp = "/sys/kernel/mm/transparent_hugepage/enabled";  // the case reported
  if (std::filesystem::exists(thp)) {
    EXPECT_THROW((void)TextData::from_file(thp, 16, 10), Error);
  }
}

// A file too small for the window names what set the window: a checkpoint's n_positions when
// eval reads it, where --seq-len is no flag; and says "1 byte".
TEST(TextData, TooSmallAFileNamesWhatSetTheWindow) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("zerodp_text_byte_" + std::to_string(::getpid()) + ".bin");
  write_bytes(path, {'x'});
  try {
    (void)TextData::from_file(path.string(), 128, 100, "f", "the checkpoint's n_positions");
    ADD_FAILURE() << "a 1-byte file was taken";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("f has 1 byte; the checkpoint's n_positions 128 with a 100 %"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("at least 129"), std::string::npos) << message;
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace zerodp::data
