// Ranks that agree (zerodp/run/agreement.h), called directly on thread ranks: the same
// settings pass; a setting one rank runs otherwise fails every rank with the same line naming
// the setting and what each rank runs; what is compared is the key, not the shown value.
#include "zerodp/run/agreement.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace zerodp::run {
namespace {

// Runs check_ranks_agree on `ranks` thread ranks, rank r with settings_of(r); returns each
// rank's outcome: "" when it passed, else the line it threw.
template <typename SettingsOf>
std::vector<std::string> outcomes(int ranks, SettingsOf settings_of) {
  std::vector<std::string> lines(ranks);
  std::mutex mu;
  comm::Options options;
  comm::run_thread_ranks(ranks, options, [&](comm::Communicator& comm) {
    std::string line;
    try {
      check_ranks_agree(comm, settings_of(comm.rank()));
    } catch (const UsageErrorOnEveryRank& e) {
      line = e.what();
    }
    std::lock_guard<std::mutex> lock(mu);
    lines[comm.rank()] = line;
  });
  return lines;
}

TEST(RanksAgree, TheSameSettingsPassOnEveryRank) {
  const auto lines = outcomes(3, [](int) {
    return RunSettings{{"--seed", "1"}, {"--stage", "3"}, {"--data", "a.txt"}};
  });
  EXPECT_EQ(lines, std::vector<std::string>(3, ""));
}

TEST(RanksAgree, OneRankOtherwiseFailsEveryRankWithOneLineNamingEachValue) {
  const auto lines = outcomes(3, [](int rank) {
    return RunSettings{{"--stage", "3"}, {"--seed", rank == 1 ? "2" : "1"}};
  });
  const std::string expected = "ranks disagree on --seed: ranks 0, 2 run 1, rank 1 runs 2";
  EXPECT_EQ(lines, std::vector<std::string>(3, expected));
}

TEST(RanksAgree, TheFirstSettingThatDiffersIsNamed) {
  const auto lines = outcomes(2, [](int rank) {
    return RunSettings{{"--lr", rank ? "1e-3" : "2e-3"}, {"--seed", rank ? "5" : "1"}};
  });
  EXPECT_EQ(lines[0], "ranks disagree on --lr: rank 0 runs 2e-3, rank 1 runs 1e-3");
  EXPECT_EQ(lines[1], lines[0]);
}

TEST(RanksAgree, TheKeyIsComparedNotTheValueShown) {
  // The same bytes at two paths agree; the same path with other bytes does not.
  const auto same_bytes = outcomes(2, [](int rank) {
    return RunSettings{{"--data", rank ? "/b/text" : "/a/text", "fnv1a64 1234, 9 bytes"}};
  });
  EXPECT_EQ(same_bytes, std::vector<std::string>(2, ""));
  const auto other_bytes = outcomes(2, [](int rank) {
    return RunSettings{
        {"--data", "text", rank ? "fnv1a64 1234, 9 bytes" : "fnv1a64 5678, 9 bytes"}};
  });
  EXPECT_EQ(other_bytes[0],
            "ranks disagree on --data: ranks 0, 1 run text (the same text, other "
            "bytes)");
}

TEST(RanksAgree, ControlCharactersInAValueArePrintedEscaped) {
  const auto lines = outcomes(2, [](int rank) {
    return RunSettings{{"--data", rank ? std::string("x\x1b[2Jy") : std::string("x")}};
  });
  EXPECT_EQ(lines[0], "ranks disagree on --data: rank 0 runs x, rank 1 runs x\\x1b[2Jy");
}

TEST(DisagreementLine, RanksAreGroupedByValueInOrderOfTheirLowestRank) {
  EXPECT_EQ(disagreement_line("--stage", {"3", "2", "2", "2", "3"}),
            "ranks disagree on --stage: ranks 0, 4 run 3, ranks 1-3 run 2");
  EXPECT_EQ(disagreement_line("--resume", {"", "ck"}),
            "ranks disagree on --resume: rank 0 runs (none), rank 1 runs ck");
}

TEST(GatherWords, EveryRanksWordsArriveBitForBitInRankOrder) {
  std::vector<std::vector<std::uint64_t>> got(3);
  std::mutex mu;
  comm::run_thread_ranks(3, comm::Options{}, [&](comm::Communicator& comm) {
    const std::uint64_t r = std::uint64_t(comm.rank());
    // All 64 bits used, including patterns that are NaNs and infinities as 16-bit floats.
    const std::vector<std::uint64_t> all =
        gather_words(comm, {0xffffffffffffffffull - r, 0x7c007e00fc00ffffull + r});
    std::lock_guard<std::mutex> lock(mu);
    got[comm.rank()] = all;
  });
  const std::vector<std::uint64_t> expected = {0xffffffffffffffffull, 0x7c007e00fc00ffffull,
                                               0xfffffffffffffffeull, 0x7c007e00fc010000ull,
                                               0xfffffffffffffffdull, 0x7c007e00fc010001ull};
  for (const auto& all : got) EXPECT_EQ(all, expected);
}

}  // namespace
}  // namespace zerodp::run
