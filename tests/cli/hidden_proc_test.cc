// The planner with /proc hidden, in a file of its own: the sanitizers' runtime reads /proc itself
// (LeakSanitizer the process's threads, the symboliser the executable's path) and fails there
// before zerodp's own code is what the test sees, so tests/CMakeLists.txt leaves this file out of
// the sanitizer builds, and the release build's test run holds it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::line_count;
using testing::run_program;
using zerodp::testing::fresh_folder;

bool contains_text(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The planner hands train to the zerodp-engine beside it. With /proc hidden (a private mount
// namespace over an empty /proc), /proc/self/exe cannot say where that is: a zerodp-engine in the
// current folder must not be run in its place.
TEST(HostileStreams, WithProcHiddenTheEngineIsNeverLookedUpInTheCurrentFolder) {
  const std::string dir = fresh_folder("hidden_proc");
  fs::create_directory(dir + "/bin");
  fs::copy_file(ZERODP_BIN, dir + "/bin/zerodp");  // a zerodp with no engine beside it
  const std::string marker = dir + "/ran";
  {
    std::ofstream fake(dir + "/zerodp-engine");
    fake << "#!/bin/sh\ntouch '" << marker << "'\n";
  }
  fs::permissions(dir + "/zerodp-engine", fs::perms::owner_all);
  {
    std::ofstream hide(dir + "/hide.sh");
    hide << "mount -t tmpfs none /proc && cd \"$1\" && shift && exec \"$@\"\n";
  }
  // unshare -m /bin/sh hide.sh FOLDER PROGRAM ARGS: PROGRAM run in FOLDER with /proc empty.
  const std::string hidden = "-m /bin/sh '" + dir + "/hide.sh' '" + dir + "' ";
  const CliResult r = run_program("unshare", hidden + "'" + dir + "/bin/zerodp' train --steps 1");
  EXPECT_FALSE(fs::exists(marker)) << "the zerodp-engine of the current folder ran";
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains_text(r.err, "engine")) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  // The built zerodp, by its full path, still finds its own engine with /proc hidden.
  const CliResult built =
      run_program("unshare", hidden + "'" + std::string(ZERODP_BIN) + "' train --help");
  EXPECT_EQ(built.status, 0) << built.err;
  EXPECT_TRUE(contains_text(built.out, "--save-dir")) << built.out;
}

}  // namespace
}  // namespace zerodp
