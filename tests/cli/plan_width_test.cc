// `zerodp plan` in 100 columns: every plan of the README, and plans that name long paths, print
// no line wider; a table too wide is printed in parts and a long line wrapped, and --wide
// prints the same words at their whole width.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_zerodp;

constexpr std::size_t kColumns = 100;

std::set<std::string> words_in(const std::string& text) {
  std::set<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.insert(w);
  return words;
}

// The `zerodp plan` command lines of the README's shell blocks, continuation lines joined and
// comments dropped, without the leading "zerodp ".
std::vector<std::string> readme_plans() {
  std::ifstream readme(std::string(ZERODP_SOURCE_DIR) + "/README.md");
  std::vector<std::string> plans;
  bool in_sh = false;
  std::string pending;
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind("```", 0) == 0) {
      in_sh = line == "```sh";
      continue;
    }
    if (!in_sh) continue;
    const std::size_t hash = line.find(" #");
    if (hash != std::string::npos) line.resize(hash);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    const bool continues = !line.empty() && line.back() == '\\';
    if (continues) line.pop_back();
    if (pending.empty() && line.rfind("zerodp plan ", 0) != 0) continue;
    pending += line;
    if (continues) continue;
    plans.push_back(pending.substr(7));
    pending.clear();
  }
  return plans;
}

CliResult plan_in_source(const std::string& args) {
  return run_zerodp(args, "cd '" + std::string(ZERODP_SOURCE_DIR) + "' && ");
}

TEST(PlanWidth, EveryPlanOfTheReadmeFitsOneHundredColumns) {
  const std::vector<std::string> plans = readme_plans();
  ASSERT_GE(plans.size(), 10u);  // the scenario matrix's cells and the model examples
  for (const std::string& plan : plans) {
    SCOPED_TRACE(plan);
    const CliResult r = plan_in_source(plan);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_LE(testing::widest_line(r.out), kColumns) << r.out;
  }
}

TEST(PlanWidth, WideGivesTheSameWordsAtTheirWholeWidth) {
  const std::string plan =
      "plan --model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 4096 --micro-batch 1 "
      "--checkpointing full --attention flash";
  const CliResult narrow = plan_in_source(plan), wide = plan_in_source(plan + " --wide");
  ASSERT_EQ(narrow.status, 0) << narrow.err;
  ASSERT_EQ(wide.status, 0) << wide.err;
  // The peak's table and several lines are wider than 100 columns: the case this is about.
  EXPECT_GT(testing::widest_line(wide.out), 150u);
  EXPECT_LE(testing::widest_line(narrow.out), kColumns);
  EXPECT_EQ(words_in(narrow.out), words_in(wide.out));
  // The peak table's parts each start with the stage column's header.
  std::size_t parts = 0;
  for (std::size_t at = narrow.out.find("\npeak at N = 8 "); at != std::string::npos;
       at = narrow.out.find("\npeak at N = 8 ", at + 1)) {
    ++parts;
  }
  EXPECT_EQ(parts, 2u) << narrow.out;
}

TEST(PlanWidth, ALongPathIsWrappedToo) {
  // A config under a 200-byte name: the lines naming it are wrapped, the name cut at the width
  // where it is longer than a line.
  const std::string dir = zerodp::testing::fresh_folder("plan_width");
  const std::string name = dir + "/" + std::string(200, 'c') + ".json";
  fs::copy_file(std::string(ZERODP_SOURCE_DIR) + "/examples/ds_zero3_offload.json", name);
  const CliResult r = run_zerodp(
      "plan --model llama-3-8b --gpus 8 --gpu h100-80gb --deepspeed-config '" + name + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_LE(testing::widest_line(r.out), kColumns) << r.out;
  const CliResult list = run_zerodp("plan --list-models");
  EXPECT_LE(testing::widest_line(list.out), kColumns) << list.out;
  const CliResult gpus = run_zerodp("plan --list-gpus");
  EXPECT_LE(testing::widest_line(gpus.out), kColumns) << gpus.out;
}

}  // namespace
}  // namespace zerodp
