// The formatting helpers of zerodp/common/units.h that the planner's tables and figures print with.
#include <gtest/gtest.h>

#include "zerodp/common/units.h"

namespace zerodp::units {
namespace {

TEST(FormatBytes, SeedPrecisionInDecimalUnits) {
  EXPECT_EQ(format_bytes(16'000'000'000), "16.0 GB");
  EXPECT_EQ(format_bytes(5'500'000'000), "5.50 GB");
  EXPECT_EQ(format_bytes(59'574'468'096), "59.6 GB");
  EXPECT_EQ(format_bytes(1'033'593'750'000), "1.03 TB");
  EXPECT_EQ(format_bytes(800'000'000), "800 MB");
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(999), "999 B");
  EXPECT_EQ(format_bytes(24ull << 30, true), "24.0 GiB");
}

TEST(FormatBytes, OneUnitForAColumn) {
  const ByteUnit tb = byte_unit_for(1'033'593'750'000, false);
  EXPECT_EQ(tb.name, "TB");
  EXPECT_EQ(format_bytes_in(344'531'250'000, tb), "0.34 TB");
  EXPECT_EQ(format_bytes_in(1'033'593'750'000, tb), "1.03 TB");
  EXPECT_EQ(byte_unit_for(16'000'000'000, true).name, "GiB");
  EXPECT_EQ(byte_unit_for(10, false).name, "B");
  EXPECT_EQ(format_bytes_in(10, byte_unit_for(10, false)), "10 B");
}

TEST(FormatCount, ReadsBackAsWritten) {
  EXPECT_EQ(format_count(175'000'000'000), "175B");
  EXPECT_EQ(format_count(1'000'000'000), "1B");
  EXPECT_EQ(format_count(7'500'000'000), "7.5B");
  EXPECT_EQ(format_count(50'000'000), "50M");
  EXPECT_EQ(format_count(14'545'454'545), "14.5B");
  EXPECT_EQ(format_count(2'000'000'000'000), "2T");
  EXPECT_EQ(format_count(999), "999");
  for (std::uint64_t n : {175'000'000'000ull, 7'500'000'000ull, 50'000'000ull, 2'000ull}) {
    EXPECT_EQ(parse_count(format_count(n), "--params"), n);
  }
}

TEST(FormatOthers, SecondsAndPercentages) {
  EXPECT_EQ(format_seconds(2060.0 / 300.0), "6.87 s");
  EXPECT_EQ(format_seconds(0.25), "250.00 ms");
  EXPECT_EQ(format_seconds(0), "0.00 s");
  // A %.2f of 1e300 would not fit the formatter's buffer (found by fuzz/units_fuzzer.cc).
  EXPECT_EQ(format_seconds(1e300), "1e+300 s");
  EXPECT_EQ(format_seconds(2.5e12), "2.5e+12 s");
  EXPECT_EQ(format_percent(0.7 / 12.8), "5.5 %");
  EXPECT_EQ(format_percent(10.0 / (10.0 + 2060.0 / 300.0), 1), "59.3 %");
}

}  // namespace
}  // namespace zerodp::units
