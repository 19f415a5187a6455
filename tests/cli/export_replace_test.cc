// `export --out DIR` over an earlier export, where the new export fails after some of its files
// are written, and where DIR is a symbolic link. Writing into DIR file by file left, after such
// a failure, the new weights and config.json beside the old tokenizer: a folder that loads and
// is neither model. The export is whole or absent, and DIR is never reached through a link.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::line_count;
using testing::run_zerodp;
using testing::slurp;
using zerodp::testing::fresh_folder;

// Every entry of a folder by name, and the bytes of each regular file ("<link>" for a link,
// "<folder>" for a folder): two snapshots are equal only when nothing in it changed.
std::map<std::string, std::string> folder_bytes(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_symlink()) {
      files[name] = "<link>";
    } else if (entry.is_directory()) {
      files[name] = "<folder>";
    } else {
      files[name] = slurp(entry.path().string());
    }
  }
  return files;
}

// The entries of `dir` beyond `expected`: what an export left behind.
std::vector<std::string> left_beside(const std::string& dir,
                                     const std::vector<std::string>& expected) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (std::find(expected.begin(), expected.end(), name) == expected.end()) names.push_back(name);
  }
  return names;
}

// A folder holding `old` (2 layers, hidden 8: weights of 17 KB), `small` (1 layer, hidden 2:
// weights of 3.6 KB, below tokenizer.json's 4.7 KB) and model/, old's export.
std::string old_export(const std::string& name) {
  const std::string dir = fresh_folder(name);
  for (const auto& [ck, shape] :
       {std::pair{"old", "--layers 2 --hidden 8"}, std::pair{"small", "--layers 1 --hidden 2"}}) {
    const CliResult r = run_zerodp("train " + std::string(shape) +
                                   " --heads 1 --seq-len 8 --steps 1 --ranks 1 --out '' "
                                   "--save-dir '" +
                                   dir + "/" + ck + "'");
    EXPECT_EQ(r.status, 0) << r.err;
  }
  const CliResult r = run_zerodp("export --checkpoint '" + dir + "/old' --out '" + dir + "/model'");
  EXPECT_EQ(r.status, 0) << r.err;
  return dir;
}

TEST(ExportReplace, AWriteThatFailsAfterTheWeightsLeavesTheOldFolderByteForByte) {
  const std::string dir = old_export("export_midway");
  const auto before = folder_bytes(dir + "/model");
  ASSERT_EQ(before.size(), 5u);
  // Files of at most 4096 bytes (prlimit counts bytes, where the shell's ulimit -f counts
  // blocks of 512 or 1024 by shell; with SIGXFSZ ignored a longer write fails with EFBIG, for
  // root too): small's weights, config.json and generation_config.json are written,
  // tokenizer.json is not.
  const CliResult r =
      run_zerodp("export --checkpoint '" + dir + "/small' --out '" + dir + "/model'",
                 "trap '' XFSZ && prlimit --fsize=4096 ");
  EXPECT_EQ(r.status, 1) << r.err;
  // It failed midway, after the weights: a failure at the first file would test less.
  EXPECT_NE(r.err.find("tokenizer.json"), std::string::npos) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  EXPECT_TRUE(folder_bytes(dir + "/model") == before) << "model/ changed";
  EXPECT_EQ(left_beside(dir, {"old", "small", "model"}), std::vector<std::string>{});

  // Without the limit the same export replaces the folder as a whole.
  const CliResult again =
      run_zerodp("export --checkpoint '" + dir + "/small' --out '" + dir + "/model'");
  ASSERT_EQ(again.status, 0) << again.err;
  const auto after = folder_bytes(dir + "/model");
  EXPECT_EQ(after.size(), 5u);
  EXPECT_NE(after.at("model.safetensors"), before.at("model.safetensors"));
  EXPECT_LT(after.at("model.safetensors").size(), 4096u);
  EXPECT_NE(after.at("config.json").find("\"n_embd\": 2"), std::string::npos)
      << after.at("config.json");
  EXPECT_EQ(left_beside(dir, {"old", "small", "model"}), std::vector<std::string>{});
}

// A link is refused rather than followed: replacing the folder it names would put the export
// where the user did not say, and exchanging the link itself would leave the old folder behind
// it. One line naming --out, status 2, the folder behind it and the link as they were.
TEST(ExportReplace, AnOutThatIsASymbolicLinkIsRefusedAndNothingBehindItChanges) {
  const std::string dir = old_export("export_link");
  const auto before = folder_bytes(dir + "/model");
  fs::create_symlink("model", dir + "/to-model");
  fs::create_symlink("elsewhere/new", dir + "/dangling");
  for (const std::string link : {"to-model", "dangling"}) {
    SCOPED_TRACE(link);
    const CliResult r =
        run_zerodp("export --checkpoint '" + dir + "/small' --out '" + dir + "/" + link + "'");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.err.rfind("zerodp: --out: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
    EXPECT_EQ(line_count(r.err), 1u) << r.err;
    EXPECT_TRUE(fs::is_symlink(dir + "/" + link));
  }
  EXPECT_TRUE(folder_bytes(dir + "/model") == before) << "model/ changed";
  EXPECT_FALSE(fs::exists(dir + "/elsewhere"));
  EXPECT_EQ(left_beside(dir, {"old", "small", "model", "to-model", "dangling"}),
            std::vector<std::string>{});
}

}  // namespace
}  // namespace zerodp
