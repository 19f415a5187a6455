// The man page as a reader meets it: `man zerodp` on an 80-column terminal sets no line wider,
// has the sections a man page has, names every option of every command under that command,
// and groff has nothing to warn about.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

using testing::CliResult;
using testing::run_program;
using testing::run_zerodp;

// The page zerodp-man writes, set by man at 80 columns; and groff's warnings.
struct ManPage {
  std::string text, warnings;
};

ManPage read_man_page() {
  const std::string roff = zerodp::testing::fresh_path("zerodp_man") + ".1";
  const CliResult written = run_program(ZERODP_MAN, "> '" + roff + "'");
  EXPECT_EQ(written.status, 0) << written.err;
  const CliResult set =
      run_program("man", "-l '" + roff + "'", "MANWIDTH=80 MANPAGER=cat PAGER=cat ");
  EXPECT_EQ(set.status, 0) << set.err;
  const CliResult warned = run_program("man", "--warnings -E UTF-8 -l '" + roff + "'",
                                       "MANWIDTH=80 MANPAGER=cat PAGER=cat ");
  return {set.out, warned.err};
}

// Columns of a line man set: UTF-8 (its hyphens may be U+2010) counted as characters.
std::size_t columns(const std::string& line) {
  std::size_t n = 0;
  for (const unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

TEST(ManPage, FitsEightyColumnsAndHasTheSectionsOfAManPage) {
  const ManPage page = read_man_page();
  ASSERT_GT(page.text.size(), 10'000u);
  for (const std::string& line : testing::lines_of(page.text))
    EXPECT_LE(columns(line), 80u) << line;
  std::size_t at = 0;
  for (const char* section :
       {"\nNAME\n", "\nSYNOPSIS\n", "\nDESCRIPTION\n", "\nCOMMANDS\n", "\nOPTIONS\n",
        "\nEXAMPLES\n", "\nEXIT STATUS\n", "\nFILES\n", "\nSEE ALSO\n"}) {
    const std::size_t found = page.text.find(section, at);
    EXPECT_NE(found, std::string::npos) << section << " (in this order)";
    if (found != std::string::npos) at = found;
  }
  EXPECT_EQ(page.warnings, "");
}

TEST(ManPage, NamesEveryOptionOfEveryCommandUnderIt) {
  const ManPage page = read_man_page();
  // The OPTIONS section, cut into each command's part.
  const std::size_t options = page.text.find("\nOPTIONS\n");
  const std::size_t examples = page.text.find("\nEXAMPLES\n");
  ASSERT_NE(options, std::string::npos);
  ASSERT_NE(examples, std::string::npos);
  const std::string section = page.text.substr(options, examples - options);
  for (const char* command : {"plan", "plot", "measure", "train", "eval", "sample", "export"}) {
    SCOPED_TRACE(command);
    const std::size_t start = section.find("\n   zerodp " + std::string(command) + "\n");
    ASSERT_NE(start, std::string::npos);
    const std::size_t end = section.find("\n   zerodp ", start + 1);
    const std::string part = section.substr(start, end == std::string::npos ? end : end - start);
    const CliResult help = run_zerodp(std::string(command) + " --help");
    int flags = 0;
    for (const std::string& line : testing::lines_of(help.out)) {
      // The help's option lines: "  --flag VALUE  description".
      if (line.rfind("  --", 0) != 0) continue;
      const std::string flag = line.substr(2, line.find(' ', 2) - 2);
      EXPECT_NE(part.find("\n       " + flag), std::string::npos) << flag;
      ++flags;
    }
    EXPECT_GE(flags, 2);  // export has two
  }
}

}  // namespace
}  // namespace zerodp
