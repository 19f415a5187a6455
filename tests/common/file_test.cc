// Files as a hostile user leaves them (common/file.h): links planted where zerodp writes,
// FIFOs and devices where it reads or writes, files too large to be what they claim, and JSON
// nested deeper than any parser's stack (common/json_text.h).
#include <fcntl.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "testing/temp_dir.h"
#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/common/json_text.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test.
using zerodp::testing::fresh_folder;

void put_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ReadBounded, ReadsARegularFileAndALinkToOne) {
  const std::string dir = fresh_folder("read");
  put_file(dir + "/a.json", "{\"x\": 1}");
  fs::create_symlink(dir + "/a.json", dir + "/link.json");
  std::string why;
  EXPECT_EQ(read_bounded(dir + "/a.json", 100, why), "{\"x\": 1}");
  EXPECT_EQ(read_bounded(dir + "/link.json", 100, why), "{\"x\": 1}");
  // Exactly at the bound is read; one byte less is refused, naming the bound.
  EXPECT_TRUE(read_bounded(dir + "/a.json", 8, why).has_value());
  EXPECT_FALSE(read_bounded(dir + "/a.json", 7, why).has_value());
  EXPECT_EQ(why, "is larger than 7 bytes");
}

TEST(ReadBounded, RefusesWhatIsNotAFileWithoutBlockingOrReadingForever) {
  const std::string dir = fresh_folder("special");
  std::string why;
  EXPECT_FALSE(read_bounded(dir + "/missing", 100, why).has_value());
  EXPECT_EQ(why, "no such file");
  EXPECT_FALSE(read_bounded(dir, 100, why).has_value());
  EXPECT_EQ(why, "is a directory");
  // A FIFO with no writer: an open without O_NONBLOCK would wait forever.
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(read_bounded(dir + "/fifo", 100, why).has_value());
  EXPECT_EQ(why, "is a FIFO (named pipe), not a file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // /dev/zero never ends: refused before a byte is read.
  EXPECT_FALSE(read_bounded("/dev/zero", 1 << 20, why).has_value());
  EXPECT_EQ(why, "is a device, not a file");
  EXPECT_EQ(unreadable_because("/dev/zero"), "is a device, not a file");
  EXPECT_EQ(unreadable_because(dir + "/fifo"), "is a FIFO (named pipe), not a file");
}

TEST(AtomicFile, NeverWritesThroughALinkAtTheTarget) {
  const std::string dir = fresh_folder("link_target");
  put_file(dir + "/victim", "precious");
  fs::create_symlink(dir + "/victim", dir + "/out.svg");
  EXPECT_EQ(unreplaceable_because(dir + "/out.svg"), "is a symbolic link");
  EXPECT_THROW(write_file_atomically(dir + "/out.svg", "<svg/>"), Error);
  EXPECT_EQ(text_of(dir + "/victim"), "precious");
  EXPECT_TRUE(fs::is_symlink(dir + "/out.svg"));
  // Nothing of ours is left behind.
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
}

TEST(AtomicFile, ALinkPlantedUnderTheOldTemporaryNameIsNeverOpened) {
  // Before: NAME.tmp was opened with O_CREAT | O_TRUNC, so a link planted there was written
  // through. The temporary name is now the writer's own, created with O_EXCL | O_NOFOLLOW.
  const std::string dir = fresh_folder("planted_tmp");
  put_file(dir + "/victim", "precious");
  fs::create_symlink(dir + "/victim", dir + "/manifest.json.tmp");
  write_file_atomically(dir + "/manifest.json", "{}\n");
  EXPECT_EQ(text_of(dir + "/victim"), "precious");
  EXPECT_EQ(text_of(dir + "/manifest.json"), "{}\n");
}

TEST(AtomicFile, ReplacesARegularFileAndRefusesFifosDevicesAndFolders) {
  const std::string dir = fresh_folder("replace");
  put_file(dir + "/old", "old");
  write_file_atomically(dir + "/old", "new");
  EXPECT_EQ(text_of(dir + "/old"), "new");

  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0644), 0);
  EXPECT_EQ(unreplaceable_because(dir + "/fifo"), "is a FIFO (named pipe), not a file");
  EXPECT_THROW(write_file_atomically(dir + "/fifo", "x"), Error);
  EXPECT_TRUE(fs::is_fifo(dir + "/fifo"));

  // A character device of its own (root makes one; /dev/null's numbers, 1:3).
  if (::mknod((dir + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    EXPECT_EQ(unreplaceable_because(dir + "/null"), "is a device, not a file");
    EXPECT_THROW(write_file_atomically(dir + "/null", "x"), Error);
    EXPECT_TRUE(fs::is_character_file(dir + "/null"));
  } else {
    ASSERT_NE(::geteuid(), 0u) << "root could not make a device node";
  }
  fs::create_directories(dir + "/sub");
  EXPECT_EQ(unreplaceable_because(dir + "/sub"), "is a directory");
  EXPECT_NE(unreplaceable_because(dir + "/nowhere/x.svg").find("is in no folder that exists"),
            std::string::npos);
}

TEST(AtomicFile, ADestroyedWriterLeavesNoTemporaryAndNoTarget) {
  const std::string dir = fresh_folder("abandon");
  {
    AtomicFile file(dir + "/half");
    file.write("half of it");
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Utf8Text, KeepsValidUtf8AndShowsEveryOtherByteAsItsHex) {
  EXPECT_EQ(utf8_text("plain/ascii.json"), "plain/ascii.json");
  EXPECT_EQ(utf8_text("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");                // é, €, an emoji: valid
  EXPECT_EQ(utf8_text("caf\xe9.json"), "caf\\xE9.json");                 // Latin-1 é
  EXPECT_EQ(utf8_text("\x80"), "\\x80");                                 // a lone continuation byte
  EXPECT_EQ(utf8_text("\xc0\xaf"), "\\xC0\\xAF");                        // an overlong '/'
  EXPECT_EQ(utf8_text("\xed\xa0\x80"), "\\xED\\xA0\\x80");               // a UTF-16 surrogate
  EXPECT_EQ(utf8_text("\xf4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");      // above U+10FFFF
  EXPECT_EQ(utf8_text("\xe2\x82"), "\\xE2\\x82");                        // cut short at the end
  EXPECT_EQ(utf8_text(std::string("a\0b", 3)), std::string("a\0b", 3));  // JSON escapes NUL
  // Whatever the bytes, the result is text nlohmann's writer accepts.
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_NO_THROW(nlohmann::json(utf8_text(all)).dump());
}

TEST(JsonDepth, CountsNestingOutsideStrings) {
  EXPECT_EQ(json_depth("1"), 0);
  EXPECT_EQ(json_depth("{\"a\": [1, {\"b\": []}]}"), 4);
  // Brackets inside strings, escaped quotes included, are text.
  EXPECT_EQ(json_depth("{\"a\": \"[[[\\\"[[\"}"), 1);
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  EXPECT_EQ(json_depth(deep), kMaxJsonDepth + 1);  // counted no further than needed
  EXPECT_NE(json_depth_refusal(deep).find("nests more than 64 levels deep"), std::string::npos);
  const std::string at_limit = std::string(64, '[') + std::string(64, ']');
  EXPECT_EQ(json_depth_refusal(at_limit), "");
}

TEST(Shown, LongTextIsCutAndControlsEscaped) {
  EXPECT_EQ(shown("adamw"), "'adamw'");
  EXPECT_EQ(shown("a\x1b]0;x\x07"), "'a\\x1b]0;x\\x07'");
  const std::string mega(1 << 20, 'x');
  const std::string s = shown(mega);
  EXPECT_LT(s.size(), 100u);
  EXPECT_NE(s.find("(1048576 bytes)"), std::string::npos);
  // A cut never splits a UTF-8 character.
  EXPECT_EQ(cut_long(std::string(63, 'a') + "Φ", 64), std::string(63, 'a') + "... (65 bytes)");
}

// The bound holds on the text as printed: each DEL byte escapes to four characters, so 64 of
// them would print 256; 16 fit in 64 characters, and the line says how many bytes there were.
TEST(Shown, ControlBytesCountAsTheCharactersTheyPrint) {
  std::string escaped_16;
  for (int i = 0; i < 16; ++i) escaped_16 += "\\x7f";
  EXPECT_EQ(shown(std::string(64, '\x7f')), "'" + escaped_16 + "... (64 bytes)'");
  EXPECT_EQ(shown(std::string(16, '\x7f')), "'" + escaped_16 + "'");  // exactly 64: whole
  EXPECT_EQ(shown("ab\ncd", 3), "'ab... (5 bytes)'");                 // "\n" is two characters
  // printable() passes plain text through and bounds the text it has to quote.
  EXPECT_EQ(printable(std::string(64, 'k'), 64), std::string(64, 'k'));
  EXPECT_EQ(printable(std::string(64, '\x7f'), 64), "'" + escaped_16 + "... (64 bytes)'");
  EXPECT_EQ(printable("a\x1b", 64), "'a\\x1b'");
  const std::string key = "zero_optimiz" + std::string(64, '\x7f') + "ation";
  EXPECT_LE(printable(key, 64).size(), 64u + 2 + std::string("... (81 bytes)").size());
}

}  // namespace
}  // namespace zerodp
