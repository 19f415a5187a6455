// ZeRO++'s one type: its words, its parser and the rule that it is stage 3's.
#include "zerodp/common/zeropp.h"

#include <gtest/gtest.h>

#include <string>

#include "zerodp/common/error.h"

namespace zerodp {
namespace {

std::string refusal(std::string_view text) {
  try {
    parse_zeropp(text, "--zeropp");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(ZeroPlusPlus, EverySetOfSwitchesReadsBackFromItsWords) {
  for (int bits = 0; bits < 8; ++bits) {
    ZeroPlusPlus z;
    z.qwz = bits & 1;
    z.hpz = bits & 2;
    z.qgz = bits & 4;
    EXPECT_EQ(parse_zeropp(z.words(), "--zeropp"), z) << z.words();
    EXPECT_EQ(z.any(), bits != 0);
  }
  EXPECT_EQ(ZeroPlusPlus{}.words(), "none");
  // Any order reads; the words come back in one.
  EXPECT_EQ(parse_zeropp("qgz,qwz", "--zeropp").words(), "qwz,qgz");
}

TEST(ZeroPlusPlus, AnythingElseIsRefusedNamingTheInput) {
  for (const char* bad : {"", "qwz,", ",qwz", "qwz,qwz", "QWZ", "none,qwz", "qwz hpz", "all"}) {
    EXPECT_EQ(refusal(bad).rfind("--zeropp: expected none or a list of qwz, hpz, qgz", 0), 0u)
        << bad << ": " << refusal(bad);
  }
  // A long value is shown cut: the message stays a line.
  EXPECT_LT(refusal(std::string(100'000, 'q')).size(), 200u);
}

TEST(ZeroPlusPlus, OnlyStageThreeTakesIt) {
  const ZeroPlusPlus qgz = parse_zeropp("qgz", "--zeropp");
  for (Stage stage : {Stage::dp, Stage::zero1, Stage::zero2}) {
    EXPECT_EQ(zeropp_stage_refusal(qgz, stage),
              "qgz quantizes stage 3's gradient reductions; expected stage 3, got stage " +
                  std::to_string(stage_number(stage)));
    EXPECT_EQ(zeropp_stage_refusal({}, stage), "");
  }
  EXPECT_EQ(zeropp_stage_refusal(parse_zeropp("qwz,hpz,qgz", "x"), Stage::zero3), "");
}

TEST(ZeroPlusPlus, HpzSpansItsPartitionOrOneGpuWithoutIt) {
  EXPECT_EQ((ZeroPlusPlus{.hpz = true, .hpz_size = 8}).hpz_span(), 8);
  EXPECT_EQ((ZeroPlusPlus{.hpz_size = 8}).hpz_span(), 1);
  EXPECT_TRUE((ZeroPlusPlus{.qgz = true}).uses_hosts());
  EXPECT_TRUE((ZeroPlusPlus{.qgz = true}).quantizes());
  EXPECT_FALSE((ZeroPlusPlus{.hpz = true}).quantizes());
}

}  // namespace
}  // namespace zerodp
