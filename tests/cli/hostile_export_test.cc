// An export as a hostile user meets it: one that fails, or is killed, halfway through
// replacing an earlier export. Before, the folder was left holding the new weights beside the
// old config.json, a model that loads and is wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_zerodp;
using testing::slurp;
using zerodp::testing::fresh_folder;

// Every file of a folder and its bytes.
std::map<std::string, std::string> contents(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    files[entry.path().filename().string()] = slurp(entry.path().string());
  }
  return files;
}

// The names of the files where `a` and `b` differ (a file on one side only counts): short to
// print, unlike the files.
std::vector<std::string> differing(const std::map<std::string, std::string>& a,
                                   const std::map<std::string, std::string>& b) {
  std::vector<std::string> names;
  for (const auto& [name, bytes] : a)
    if (!b.count(name) || b.at(name) != bytes) names.push_back(name);
  for (const auto& [name, bytes] : b)
    if (!a.count(name)) names.push_back(name);
  return names;
}

// The entries of `dir` other than `keep`: what an export left beside its folder.
std::vector<std::string> others(const std::string& dir, const std::string& keep) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name != keep && name != "ck1" && name != "ck2") names.push_back(name);
  }
  return names;
}

struct Exports {
  std::string dir;  // holds ck1 (a 2-layer model), ck2 (a 1-layer one) and model/
  std::map<std::string, std::string> first;
};

// model/ exported from ck1, to be replaced by ck2's export.
Exports exported_once(const std::string& name) {
  Exports e;
  e.dir = fresh_folder(name);
  for (const auto& [ck, layers] : {std::pair{"ck1", "2"}, std::pair{"ck2", "1"}}) {
    const CliResult r = run_zerodp("train --layers " + std::string(layers) +
                                   " --heads 1 --hidden 8 --seq-len 8 --steps 1 --ranks 1 "
                                   "--out '' --json --save-dir '" +
                                   e.dir + "/" + ck + "'");
    EXPECT_EQ(r.status, 0) << r.err;
  }
  const CliResult r =
      run_zerodp("export --checkpoint '" + e.dir + "/ck1' --out '" + e.dir + "/model'");
  EXPECT_EQ(r.status, 0) << r.err;
  e.first = contents(e.dir + "/model");
  EXPECT_EQ(e.first.size(), 5u);
  return e;
}

// ck2's export over ck1's: it succeeds, the folder holds ck2's five files (its 1-layer config,
// other weights), and nothing is left beside it.
void expect_replaced_by_ck2(const Exports& e) {
  const CliResult r =
      run_zerodp("export --checkpoint '" + e.dir + "/ck2' --out '" + e.dir + "/model'");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto second = contents(e.dir + "/model");
  EXPECT_EQ(second.size(), 5u);
  EXPECT_NE(second.at("model.safetensors"), e.first.at("model.safetensors"));
  EXPECT_NE(second.at("config.json").find("\"n_layer\": 1"), std::string::npos)
      << second.at("config.json");
  EXPECT_EQ(others(e.dir, "model"), std::vector<std::string>{});
}

TEST(HostileExport, AnExportKilledHalfwayLeavesTheOldFolderWhole) {
  const Exports e = exported_once("killed");
  const CliResult r =
      run_zerodp("export --checkpoint '" + e.dir + "/ck2' --out '" + e.dir + "/model'",
                 "ZERODP_INJECT_KILL_AFTER_WEIGHTS=1 ");
  EXPECT_NE(r.status, 0);
  // Every file as the first export wrote it: not ck2's weights beside ck1's config.
  EXPECT_EQ(differing(contents(e.dir + "/model"), e.first), std::vector<std::string>{});
  // The next export replaces it whole, and removes the killed one's staging folder.
  expect_replaced_by_ck2(e);
}

TEST(HostileExport, AnExportThatFailsLeavesTheOldFolderWholeAndNothingBeside) {
  const Exports e = exported_once("failed");
  // Files of at most 2 KiB: the weights cannot be written (std::system runs /bin/sh, whose
  // ulimit -f counts 512-byte blocks on Debian's dash, 1024-byte ones in bash: 4 KiB, still too
  // small; SIGXFSZ ignored, the write fails with EFBIG instead of killing).
  const CliResult r =
      run_zerodp("export --checkpoint '" + e.dir + "/ck2' --out '" + e.dir + "/model'",
                 "ulimit -f 4 && trap '' XFSZ && ");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(differing(contents(e.dir + "/model"), e.first), std::vector<std::string>{});
  EXPECT_TRUE(others(e.dir, "model").empty()) << others(e.dir, "model")[0];
}

TEST(HostileExport, AReexportReplacesTheFolderAsAWhole) {
  const Exports e = exported_once("replaced");
  expect_replaced_by_ck2(e);
  EXPECT_TRUE(fs::is_directory(e.dir + "/model"));
  EXPECT_FALSE(fs::is_symlink(e.dir + "/model"));
}

}  // namespace
}  // namespace zerodp
