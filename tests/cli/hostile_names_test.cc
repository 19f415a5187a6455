// File names that are bytes, not UTF-8 (a Latin-1 "é" is the single byte 0xE9), in every
// command that writes JSON. Before, `plan --json` and `train --json` ended in the JSON
// writer's type error ("unexpected failure"), and a run saving checkpoints could not write its
// manifest.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_zerodp;
using testing::slurp;
using zerodp::testing::fresh_folder;

const std::string kLatin1 = "caf\xe9";  // "café" in Latin-1: not UTF-8

// Parses as strict JSON (nlohmann refuses invalid UTF-8) or fails the test.
nlohmann::json strict(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << e.what();
    return {};
  }
}

TEST(HostileNames, APlanReadsALatin1NamedConfigAndPrintsValidJson) {
  const std::string dir = fresh_folder("latin1_plan");
  const std::string ds = dir + "/" + kLatin1 + ".json";
  fs::copy_file(ZERODP_SOURCE_DIR "/examples/ds_zero3_offload.json", ds);
  const std::string model = dir + "/" + kLatin1 + "-config.json";
  fs::copy_file(ZERODP_SOURCE_DIR "/examples/handwritten_config.json", model);
  for (const std::string& args :
       {"plan --deepspeed-config '" + ds + "' --model llama-3-8b --gpus 4 --json",
        "plan --model-config '" + model + "' --gpus 4 --json",
        "plan --model-config '" + model + "' --deepspeed-config '" + ds + "' --gpus 4 --json"}) {
    SCOPED_TRACE(args);
    const CliResult r = run_zerodp(args);
    EXPECT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = strict(r.out);
    EXPECT_EQ(j["stages"].size(), 4u);
    // Where the name is shown, its byte is shown as \xE9, never dropped or replaced.
    EXPECT_EQ(r.out.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
    if (r.out.find("caf") != std::string::npos) {
      EXPECT_NE(r.out.find("caf\\\\xE9"), std::string::npos) << r.out;
    }
  }
}

TEST(HostileNames, ARunOnALatin1NamedFileSavesResumesAndPrintsValidJson) {
  const std::string dir = fresh_folder("latin1_train");
  const std::string data = dir + "/" + kLatin1 + ".txt";
  fs::copy_file("/usr/share/common-licenses/GPL-3", data);
  const std::string run = "train --layers 1 --heads 1 --hidden 8 --seq-len 8 --ranks 1 --out '' ";
  const CliResult r =
      run_zerodp(run + "--steps 1 --json --data '" + data + "' --save-dir '" + dir + "/ck'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(strict(r.out)["model"]["data"], dir + "/caf\\xE9.txt");
  const nlohmann::json manifest = strict(slurp(dir + "/ck/step-00000001/manifest.json"));
  EXPECT_EQ(manifest["run"]["data"], dir + "/caf\\xE9.txt");
  // The recorded name is the shown one; the file itself is given again, and its bytes are
  // held to the recorded fingerprint.
  const CliResult resumed = run_zerodp("train --resume '" + dir + "/ck' --steps 2 --out '' " +
                                       "--json --data '" + data + "'");
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  strict(resumed.out);
  const CliResult unreadable = run_zerodp("train --resume '" + dir + "/ck' --steps 2 --out ''");
  EXPECT_EQ(unreadable.status, 2) << unreadable.err;
  EXPECT_NE(unreadable.err.find("--data"), std::string::npos) << unreadable.err;
}

}  // namespace
}  // namespace zerodp
