// Help for an 80-column terminal: `zerodp --help` and every command's --help fit it, each
// command shows two or three examples of itself, `zerodp` alone prints a short usage and -V
// the version. And the split of the planner from the engine: the executable zerodp hands the
// engine's commands to zerodp-engine beside it or in ../lib/zerodp/, and says what to install
// when there is none.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_zerodp;

// The commands `zerodp --help` lists: the lines "  NAME  summary" under "... commands:".
std::vector<std::string> listed_commands() {
  const CliResult r = run_zerodp("--help");
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::string> names;
  bool in_list = false;
  for (const std::string& line : testing::lines_of(r.out)) {
    if (line.size() > 10 && line.find("commands:") == line.size() - 9) {
      in_list = true;
    } else if (line.empty()) {
      in_list = false;
    } else if (in_list && line.rfind("  ", 0) == 0) {
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  return names;
}

TEST(Help, ListsEveryCommandOfThePlannerAndTheEngine) {
  EXPECT_EQ(listed_commands(), (std::vector<std::string>{"plan", "plot", "measure", "train", "eval",
                                                         "sample", "export"}));
}

TEST(Help, EveryHelpFitsEightyColumns) {
  const CliResult root = run_zerodp("--help");
  EXPECT_LE(testing::widest_line(root.out), 80u) << root.out;
  for (const std::string& command : listed_commands()) {
    SCOPED_TRACE(command);
    const CliResult r = run_zerodp(command + " --help");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_LE(testing::widest_line(r.out), 80u) << r.out;
    // Every option is there, each description under its own option.
    EXPECT_NE(r.out.find("Usage: zerodp " + command + " [OPTIONS]"), std::string::npos);
  }
}

TEST(Help, EveryValueIsNamedForWhatItTakes) {
  // CLI11 calls any string TEXT; each option says what it takes (COUNT, SIZE, PATH, ...), but
  // sample's --prompt, which takes text.
  for (const std::string& command : listed_commands()) {
    for (const std::string& line : testing::lines_of(run_zerodp(command + " --help").out)) {
      if (line.rfind("  --", 0) != 0 || line.find(" TEXT") == std::string::npos) continue;
      EXPECT_EQ(line.rfind("  --prompt TEXT", 0), 0u) << command << ": " << line;
    }
  }
}

// The example lines of `command`'s help: "  zerodp COMMAND ..." under "Examples:".
std::vector<std::string> help_examples_of(const std::string& command) {
  const CliResult r = run_zerodp(command + " --help");
  std::vector<std::string> examples;
  bool in_examples = false;
  for (const std::string& line : testing::lines_of(r.out)) {
    if (line == "Examples:") {
      in_examples = true;
    } else if (line.empty()) {
      in_examples = false;
    } else if (in_examples) {
      examples.push_back(line);
    }
  }
  return examples;
}

TEST(Help, EveryCommandShowsTwoOrThreeExamplesOfItself) {
  for (const std::string& command : listed_commands()) {
    SCOPED_TRACE(command);
    const std::vector<std::string> examples = help_examples_of(command);
    EXPECT_GE(examples.size(), 2u);
    EXPECT_LE(examples.size(), 3u);
    for (const std::string& example : examples) {
      EXPECT_EQ(example.rfind("  zerodp " + command + " ", 0), 0u) << example;
    }
  }
}

TEST(Help, ZerodpAlonePrintsAShortUsage) {
  const CliResult r = run_zerodp("");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("usage: zerodp COMMAND [OPTIONS]\n", 0), 0u) << r.err;
  for (const std::string& command : listed_commands()) {
    EXPECT_NE(r.err.find("\n  " + command + " "), std::string::npos) << command;
  }
  EXPECT_LE(testing::widest_line(r.err), 80u) << r.err;
  EXPECT_LE(testing::line_count(r.err), 15u) << r.err;
}

TEST(Help, VersionFlagsPrintTheVersionFile) {
  std::string version = testing::slurp(std::string(ZERODP_SOURCE_DIR) + "/VERSION");
  ASSERT_FALSE(version.empty());
  for (const char* flag : {"-V", "--version"}) {
    const CliResult r = run_zerodp(flag);
    EXPECT_EQ(r.status, 0) << flag;
    EXPECT_EQ(r.out, "zerodp " + version) << flag;
  }
}

// A folder laid out as an install: bin/zerodp, a copy of the planner, and, when `with_engine`,
// lib/zerodp/zerodp-engine, a link to the engine beside the built planner.
std::string install_layout(const std::string& name, bool with_engine) {
  const std::string root = zerodp::testing::fresh_folder(name);
  fs::create_directories(root + "/bin");
  fs::copy_file(ZERODP_BIN, root + "/bin/zerodp");
  if (with_engine) {
    fs::create_directories(root + "/lib/zerodp");
    fs::create_symlink(fs::path(ZERODP_BIN).parent_path() / "zerodp-engine",
                       root + "/lib/zerodp/zerodp-engine");
  }
  return root + "/bin/zerodp";
}

CliResult run_installed(const std::string& program, const std::string& args) {
  return testing::run_program(program, args);
}

TEST(EngineExec, APlannerWithoutItsEnginePlansAndSaysWhatToInstallForTheRest) {
  const std::string zerodp = install_layout("planner_only", false);
  const CliResult plan = run_installed(zerodp, "plan --params 1e9 --gpus 8");
  EXPECT_EQ(plan.status, 0) << plan.err;
  EXPECT_NE(plan.out.find("ZeRO-3"), std::string::npos);
  const CliResult train = run_installed(zerodp, "train --dry-run");
  EXPECT_EQ(train.status, 1);
  EXPECT_EQ(testing::line_count(train.err), 1u) << train.err;
  EXPECT_NE(train.err.find("'train' is a command of the engine"), std::string::npos) << train.err;
  EXPECT_NE(train.err.find("zerodp-engine"), std::string::npos) << train.err;
  // The help still lists the engine's commands.
  const CliResult help = run_installed(zerodp, "--help");
  EXPECT_NE(help.out.find("\n  train "), std::string::npos) << help.out;
}

TEST(EngineExec, AnInstalledPlannerRunsTheEngineFromLibZerodp) {
  const std::string zerodp = install_layout("planner_and_engine", true);
  const CliResult r = run_installed(zerodp, "train --ranks 2 --dry-run --json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"peak_bytes\""), std::string::npos) << r.out;
  // Bad input is the engine's own one line and status.
  const CliResult bad = run_installed(zerodp, "train --ranks 0");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--ranks"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace zerodp
