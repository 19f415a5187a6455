#include "zerodp/data/text_data.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "zerodp/common/error.h"

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

}  // namespace
}  // namespace zerodp::data
