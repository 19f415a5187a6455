// The examples every --help shows run as printed, in a folder holding the files they name
// (config.json, ds.json, input.txt): a user who copies one gets an answer, never an error. They
// run the engine for a few steps each, so this file is left out of sanitizer builds
// (tests/CMakeLists.txt), whose engine tests are the engine's own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_zerodp;

// `command`'s examples, without the leading "  zerodp ".
std::vector<std::string> example_commands_of(const std::string& command) {
  const CliResult r = run_zerodp(command + " --help");
  std::vector<std::string> examples;
  std::istringstream in(r.out);
  bool in_examples = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "Examples:") {
      in_examples = true;
    } else if (line.empty()) {
      in_examples = false;
    } else if (in_examples && line.rfind("  zerodp ", 0) == 0) {
      examples.push_back(line.substr(9));
    }
  }
  return examples;
}

TEST(HelpExamples, EveryExampleRunsAsPrinted) {
  const std::string dir = zerodp::testing::fresh_folder("help_examples");
  const std::string source = ZERODP_SOURCE_DIR;
  fs::copy_file(source + "/examples/handwritten_config.json", dir + "/config.json");
  fs::copy_file(source + "/examples/ds_zero3_offload.json", dir + "/ds.json");
  {
    // 24 kB of text: enough windows for the default GPT's 128 bytes.
    std::ofstream text(dir + "/input.txt");
    for (int i = 0; i < 400; ++i) {
      text << "Line " << i << ": the quick brown fox jumps over the lazy dog.\n";
    }
  }
  // train first: eval, sample and export read its checkpoint.
  int run = 0;
  for (const char* command : {"plan", "plot", "train", "measure", "eval", "sample", "export"}) {
    const std::vector<std::string> examples = example_commands_of(command);
    EXPECT_GE(examples.size(), 2u) << command;
    for (const std::string& example : examples) {
      SCOPED_TRACE(example);
      const CliResult r = run_zerodp(example, "cd '" + dir + "' && ");
      EXPECT_EQ(r.status, 0) << r.err;
      EXPECT_FALSE(r.out.empty());
      ++run;
    }
  }
  EXPECT_GE(run, 14);
}

}  // namespace
}  // namespace zerodp
