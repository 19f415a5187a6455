// Errors that name inputs by field: what() in the library's words, message() in a front end's,
// the field itself typed, and references that survive being carried on.
#include <gtest/gtest.h>

#include "zerodp/common/error.h"
#include "zerodp/common/stage.h"

namespace zerodp {
namespace {

std::string flags(std::string_view field) {
  std::string flag = "--";
  for (const char c : field) flag += c == '_' ? '-' : c;
  return flag;
}

TEST(Error, WhatNamesFieldsAndMessageNamesThemAsTheFrontEndDoes) {
  const InvalidArgument e(field_ref("micro_batch") + ": lower it, or raise " +
                          field_ref("grad_accum"));
  EXPECT_EQ(e.field(), "micro_batch");
  EXPECT_STREQ(e.what(), "micro_batch: lower it, or raise grad_accum");
  EXPECT_EQ(e.message(flags), "--micro-batch: lower it, or raise --grad-accum");
  EXPECT_EQ(name_fields(e.text(), flags), e.message(flags));
}

TEST(Error, ExpectedQuotesWhatItGotOnOneLine) {
  const InvalidArgument e = InvalidArgument::expected("model", "gpt or mlp", "gpt2\n\x1b[2J");
  EXPECT_EQ(e.field(), "model");
  EXPECT_STREQ(e.what(), "model: expected gpt or mlp, got 'gpt2\\n\\x1b[2J'");
}

TEST(Error, ReferencesSurviveBeingCarriedOn) {
  const UsageError first(field_ref("seed") + ": differs");
  const Error carried("rank 1 failed: " + failure_text(first));
  EXPECT_EQ(carried.message(flags), "rank 1 failed: --seed: differs");
  EXPECT_EQ(failure_text(std::runtime_error("plain")), "plain");
}

TEST(Error, AMarkThatOpensNoReferenceIsKeptNotDropped) {
  // Text a message did not quote: a lone mark, or marks around something that is no field.
  const std::string lone =
      "a\x1d"
      "b";
  EXPECT_EQ(name_fields(lone, flags), lone);
  const std::string odd = "x \x1dnot a field\x1d y";
  EXPECT_EQ(name_fields(odd, flags), odd);
  EXPECT_EQ(name_fields("plain text", flags), "plain text");
}

TEST(Error, LibraryRefusalsCarryTheirField) {
  try {
    parse_stage("7");
    ADD_FAILURE() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "stage");
    EXPECT_EQ(e.message(flags), "--stage: expected 0, 1, 2 or 3, got '7'");
  }
}

}  // namespace
}  // namespace zerodp
