#include "zerodp/common/units.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "zerodp/common/error.h"

namespace zerodp::units {
namespace {

TEST(ParseCount, AcceptsTheFormsPeopleWrite) {
  EXPECT_EQ(parse_count("1e9", "--params"), 1'000'000'000u);
  EXPECT_EQ(parse_count("1B", "--params"), 1'000'000'000u);
  EXPECT_EQ(parse_count("7.5B", "--params"), 7'500'000'000u);
  EXPECT_EQ(parse_count("175B", "--params"), 175'000'000'000u);
  EXPECT_EQ(parse_count("50M", "--params"), 50'000'000u);
  EXPECT_EQ(parse_count("5e7", "--params"), 50'000'000u);
  EXPECT_EQ(parse_count("1.75e11", "--params"), 175'000'000'000u);
  EXPECT_EQ(parse_count("3257856", "--params"), 3'257'856u);
  EXPECT_EQ(parse_count("10K", "--params"), 10'000u);
}

TEST(ParseCount, RejectsWhatIsNotACount) {
  for (const char* bad : {"", "abc", "-5", "nan", "inf", "1.5", "0", "1X", "1e", "B", "1e30",
                          "18446744073709551616", "1..5", " 5"}) {
    EXPECT_THROW(parse_count(bad, "--params"), UsageError) << bad;
  }
}

TEST(ParseCount, ErrorNamesTheFlagAndTheForm) {
  try {
    parse_count("12Q", "--params");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "--params: expected a count such as 1e9, 7.5B, 175B or 50M, got '12Q' "
                 "(unknown unit)");
  }
}

// Found by fuzz/units_fuzzer.cc: text with a newline made the message two lines.
TEST(ParseCount, ErrorStaysOneLineWhateverTheText) {
  try {
    parse_count(std::string("51:r\n\0\x7f", 7), "--params");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "--params: expected a count such as 1e9, 7.5B, 175B or 50M, got "
                 "'51:r\\n\\x00\\x7f' (unknown unit)");
  }
}

TEST(ParseCount, LargestValueFitsAndOneMoreDoesNot) {
  EXPECT_EQ(parse_count("18446744073709551615", "--params"), UINT64_MAX);
  EXPECT_THROW(parse_count("18446744073709551616", "--params"), UsageError);
  EXPECT_THROW(parse_count("18.5e18", "--params"), UsageError);
}

TEST(ParseBytes, DecimalAndBinaryUnitsAreExact) {
  EXPECT_EQ(parse_bytes("80GB", "--gpu-memory"), 80'000'000'000u);
  EXPECT_EQ(parse_bytes("24GiB", "--gpu-memory"), 24ull << 30);
  EXPECT_EQ(parse_bytes("512MB", "--gpu-memory"), 512'000'000u);
  EXPECT_EQ(parse_bytes("2.06TB", "--comm-bytes"), 2'060'000'000'000u);
  EXPECT_EQ(parse_bytes("0.5KiB", "--x"), 512u);
  EXPECT_EQ(parse_bytes("0GB", "--activations", Zero::allowed), 0u);
}

TEST(ParseBytes, RejectsMissingUnitsFractionsOfABytesAndZero) {
  EXPECT_THROW(parse_bytes("80", "--gpu-memory"), UsageError);
  EXPECT_THROW(parse_bytes("1.5B", "--gpu-memory"), UsageError);
  EXPECT_THROW(parse_bytes("0GB", "--gpu-memory"), UsageError);
  EXPECT_THROW(parse_bytes("20000PB", "--gpu-memory"), UsageError);  // > 2^64 bytes
  EXPECT_THROW(parse_bytes("80 ", "--gpu-memory"), UsageError);      // spaces are no unit
  EXPECT_THROW(parse_bytes("80GBs", "--gpu-memory"), UsageError);
  EXPECT_THROW(parse_bytes("80 XB", "--gpu-memory"), UsageError);
  EXPECT_THROW(parse_bytes("80GB ", "--gpu-memory"), UsageError);  // only spaces before
}

TEST(ParseBytes, TheUnitInAnyCaseAfterSpacesOrAsOneLetterAsOtherToolsWriteIt) {
  for (const char* text : {"80GB", "80gb", "80Gb", "80 GB", "80  gb", "80G", "80g", "80 G"}) {
    EXPECT_EQ(parse_bytes(text, "--gpu-memory"), 80'000'000'000u) << text;
  }
  for (const char* text : {"24GiB", "24gib", "24 GiB", "24Gi", "24gi"}) {
    EXPECT_EQ(parse_bytes(text, "--gpu-memory"), 24ull << 30) << text;
  }
  EXPECT_EQ(parse_bytes("512m", "--x"), 512'000'000u);
  EXPECT_EQ(parse_bytes("8Mi", "--x"), 8u << 20);
  EXPECT_EQ(parse_bytes("2k", "--x"), 2000u);
  EXPECT_EQ(parse_bytes("1 t", "--x"), 1'000'000'000'000u);
  EXPECT_EQ(parse_capacity("39.39 gib", "--gpu-memory"), 3939ull * (1ull << 30) / 100);
  // The error quotes what was typed.
  try {
    parse_bytes("80 XB", "--gpu-memory");
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--gpu-memory: expected a size such as 80GB, 24GiB or 512MB, got '80 XB' (unknown "
              "unit)");
  }
}

TEST(ParseCapacity, ACapacityPrintedRoundedIsFlooredToWholeBytes) {
  // 23.65 GiB as an out-of-memory message prints it: 2365 * 2^30 / 100 = 25,393,994,137.6.
  EXPECT_EQ(parse_capacity("23.65GiB", "--gpu-memory"), 25'393'994'137u);
  EXPECT_EQ(parse_capacity("39.39GiB", "--gpu-memory"), 3939ull * (1ull << 30) / 100);
  // What parse_bytes() reads exactly, it reads the same.
  for (const char* text : {"80GB", "24GiB", "512MB", "0.5KiB", "1B"}) {
    EXPECT_EQ(parse_capacity(text, "--gpu-memory"), parse_bytes(text, "--gpu-memory")) << text;
  }
  // Many decimals: the 21st and later move the value by far less than a byte.
  EXPECT_EQ(parse_capacity("1.0000000000000000000000001GiB", "--gpu-memory"), 1ull << 30);
  EXPECT_EQ(parse_capacity("1.5B", "--gpu-memory"), 1u);
  // Still refused: no unit, nothing left (a fraction of one byte), and past 2^64 bytes.
  EXPECT_THROW(parse_capacity("80", "--gpu-memory"), UsageError);
  EXPECT_THROW(parse_capacity("0.5B", "--gpu-memory"), UsageError);
  EXPECT_THROW(parse_capacity("20000.5PB", "--gpu-memory"), UsageError);
  EXPECT_THROW(parse_capacity("17179869184.5GiB", "--gpu-memory"), UsageError);  // 2^64 + 2^29
}

TEST(ParseWhole, DigitsOrACountsFormThatIsWhole) {
  EXPECT_EQ(parse_whole("47", "--gpus"), 47u);
  EXPECT_EQ(parse_whole("1e3", "--steps"), 1000u);
  EXPECT_EQ(parse_whole("2.5e3", "--steps"), 2500u);
  EXPECT_EQ(parse_whole("4.0", "--gpus"), 4u);
  EXPECT_THROW(parse_whole("4.5", "--gpus"), UsageError);
  EXPECT_THROW(parse_whole("1e-1", "--gpus"), UsageError);
  EXPECT_THROW(parse_whole("1e400", "--gpus"), UsageError);
  EXPECT_THROW(parse_whole("4K", "--gpus"), UsageError);
  EXPECT_THROW(parse_whole("0", "--gpus"), UsageError);
  EXPECT_THROW(parse_whole("-1", "--gpus"), UsageError);
  EXPECT_EQ(parse_whole("0", "--x", Zero::allowed), 0u);
}

TEST(ParseSeconds, UnitsScale) {
  EXPECT_DOUBLE_EQ(parse_seconds("10s", "--compute-time"), 10.0);
  EXPECT_DOUBLE_EQ(parse_seconds("250ms", "--compute-time"), 0.25);
  EXPECT_DOUBLE_EQ(parse_seconds("10", "--compute-time"), 10.0);
  EXPECT_DOUBLE_EQ(parse_seconds("2min", "--compute-time"), 120.0);
  EXPECT_THROW(parse_seconds("0s", "--compute-time"), UsageError);
  EXPECT_THROW(parse_seconds("10parsecs", "--compute-time"), UsageError);
  EXPECT_THROW(parse_seconds("1e999s", "--compute-time"), UsageError);
}

TEST(ParseBandwidth, BytesPerSecond) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("300GB/s", "--bandwidth"), 300e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GiB/s", "--bandwidth"), 1073741824.0);
  // Bit rates: 200 Mbit/s is 25 MB/s, in tc's spelling too.
  EXPECT_DOUBLE_EQ(parse_bandwidth("200Mbit/s", "--link-rate"), 25e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("200mbit", "--link-rate"), 25e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1gbit", "--link-rate"), 125e6);
  EXPECT_THROW(parse_bandwidth("200mbits", "--link-rate"), UsageError);
  EXPECT_THROW(parse_bandwidth("300GB", "--bandwidth"), UsageError);
  EXPECT_THROW(parse_bandwidth("0GB/s", "--bandwidth"), UsageError);
}

TEST(ParseFraction, ClosedUnitInterval) {
  EXPECT_DOUBLE_EQ(parse_fraction("0.6", "--overlap"), 0.6);
  EXPECT_DOUBLE_EQ(parse_fraction("60%", "--overlap"), 0.6);
  EXPECT_DOUBLE_EQ(parse_fraction("0", "--overlap"), 0.0);
  EXPECT_DOUBLE_EQ(parse_fraction("1", "--overlap"), 1.0);
  EXPECT_THROW(parse_fraction("1.01", "--overlap"), UsageError);
  EXPECT_THROW(parse_fraction("-0.1", "--overlap"), UsageError);
  EXPECT_THROW(parse_fraction("nan", "--overlap"), UsageError);
}

}  // namespace
}  // namespace zerodp::units

namespace zerodp::units {
namespace {

std::string message_of(auto&& parse) {
  try {
    parse();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ParseWholeIn, AcceptsTheRangeAndNamesItWhenOutside) {
  EXPECT_EQ(parse_whole_in("1", "--ranks", 1, 1024), 1u);
  EXPECT_EQ(parse_whole_in("1024", "--ranks", 1, 1024), 1024u);
  EXPECT_EQ(parse_whole_in("0", "--warmup", 0, 10), 0u);
  EXPECT_EQ(parse_whole_in("1e3", "--ranks", 1, 1024), 1000u);
  for (const char* bad :
       {"0", "1025", "4294967298", "2147483648", "18446744073709551616", "99999999999999999999999",
        "", "-1", "2.5", "1e4", "1e400", "1.55e1", " 4", "4 "}) {
    EXPECT_EQ(message_of([&] { parse_whole_in(bad, "--ranks", 1, 1024); }),
              std::string("--ranks: expected a whole number from 1 to 1024, got '") + bad + "'")
        << bad;
  }
}

TEST(ParseTokens, AKIs1024TokensAsModelCardsCountContextLengths) {
  EXPECT_EQ(parse_tokens("4096", "--seq-len"), 4096u);
  EXPECT_EQ(parse_tokens("4k", "--seq-len"), 4096u);
  EXPECT_EQ(parse_tokens("4K", "--seq-len"), 4096u);
  EXPECT_EQ(parse_tokens("32k", "--seq-len"), 32768u);
  EXPECT_EQ(parse_tokens("128k", "--seq-len"), 131072u);
  EXPECT_EQ(parse_tokens("1k", "--seq-len"), 1024u);
  // A plain number as parse_whole() reads it, as --seq-len read it before.
  EXPECT_EQ(parse_tokens("1e3", "--seq-len"), 1000u);
  EXPECT_EQ(parse_tokens("2048.0", "--seq-len"), 2048u);
  EXPECT_EQ(parse_tokens("64k", "--seq-len", 65536), 65536u);
  // (2^54 - 1) k is the most k that fit in 64 bits; 2^54 k is 2^64.
  EXPECT_EQ(parse_tokens("18014398509481983k", "--seq-len"), 18'446'744'073'709'550'592u);
}

TEST(ParseTokens, RefusesWhatIsNotAWholeNumberOfTokensNamingTheForm) {
  const std::string form =
      "--seq-len: expected a whole number of tokens such as 4096 or 4k (k = 1024)";
  for (const char* bad : {"4.5k", "4kk", "-4k", "1e3k", "k", "", "4 k", " 4k", "4k ", "4m", "4M",
                          "4KiB", "0x10", "-4", "abc", "4.0k", "+4k"}) {
    EXPECT_EQ(message_of([&] { parse_tokens(bad, "--seq-len"); }), form + ", got '" + bad + "'")
        << bad;
  }
  EXPECT_EQ(message_of([&] { parse_tokens("18014398509481984k", "--seq-len"); }),
            form + ", got '18014398509481984k' (does not fit in 64 bits)");
  EXPECT_EQ(message_of([&] { parse_tokens("18446744073709551616", "--seq-len"); }),
            form + ", got '18446744073709551616' (does not fit in 64 bits)");
  EXPECT_EQ(message_of([&] { parse_tokens("0k", "--seq-len"); }),
            form + ", got '0k' (must be positive)");
  EXPECT_EQ(message_of([&] { parse_tokens("4.5", "--seq-len"); }),
            form + ", got '4.5' (not a whole number)");
  EXPECT_EQ(message_of([&] { parse_tokens("65k", "--seq-len", 65536); }),
            form + ", at most 65536, got '65k'");
}

TEST(ParseSecondsIn, RefusesDurationsThatWouldOverflowMilliseconds) {
  EXPECT_DOUBLE_EQ(parse_seconds_in("300s", "--timeout", 1e-3, 604800), 300.0);
  EXPECT_DOUBLE_EQ(parse_seconds_in("168h", "--timeout", 1e-3, 604800), 604800.0);
  for (const char* bad : {"1e16s", "169h", "0.0001s", "0", "nan", "inf", "-5s", "1e400"}) {
    EXPECT_EQ(message_of([&] { parse_seconds_in(bad, "--timeout", 1e-3, 604800); }),
              std::string("--timeout: expected a duration from 0.001s to 604800s such as 10s, "
                          "250ms or 2min, got '") +
                  bad + "'")
        << bad;
  }
}

}  // namespace
}  // namespace zerodp::units
